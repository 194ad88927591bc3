import BroadcastCore

/// Where a source picture lands inside the fixed output frame, keeping its aspect ratio.
package struct LetterboxGeometry: Equatable, Sendable {
    var x: Int
    var y: Int
    package var width: Int
    package var height: Int

    /// Fits `srcW x srcH` into `dstW x dstH`; offsets and sizes are even so chroma planes line up.
    static func fit(srcW: Int, srcH: Int, dstW: Int, dstH: Int) -> LetterboxGeometry {
        if srcW * dstH == srcH * dstW {
            return LetterboxGeometry(x: 0, y: 0, width: dstW, height: dstH)
        }
        var w: Int, h: Int
        if srcW * dstH > srcH * dstW {
            w = dstW
            h = (srcH * dstW + srcW / 2) / srcW
        } else {
            h = dstH
            w = (srcW * dstH + srcH / 2) / srcH
        }
        w = max(2, min(dstW, w & ~1))
        h = max(2, min(dstH, h & ~1))
        let x = ((dstW - w) / 2) & ~1
        let y = ((dstH - h) / 2) & ~1
        return LetterboxGeometry(x: x, y: y, width: w, height: h)
    }
}
