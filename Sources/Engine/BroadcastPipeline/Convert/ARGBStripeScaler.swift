import CYUV
import BroadcastCore

/// Bilinear scaling of packed 4-byte pixels, one stripe of output rows at a time, reading only
/// the two source rows behind each output row.
///
/// libyuv's `ARGBScaleClip` gives the same picture but allocates a row buffer on every call,
/// which on a scaled capture (a 1440p desktop sent at 720p) meant about 45 heap allocations a
/// frame. Here the vertical step is libyuv's `ARGBInterpolate` (SIMD, allocation-free) into one
/// source-width row made at init, and the horizontal step is a two-tap blend over a column
/// table rebuilt only when the sizes change (BENCHMARKS.md's realtime section shows its cost).
///
/// Sampling is centre-aligned: output pixel x reads source position (x + 0.5)·src/dst − 0.5,
/// clamped to the picture, with an 8-bit fraction.
final class ARGBStripeScaler {
    /// One interpolated source row (B,G,R,A), `maxSourceWidth` pixels.
    private let row: UnsafeMutablePointer<UInt32>
    /// Per output column: the left source pixel and the weight (0...256) of its right neighbour.
    private let columnIndex: UnsafeMutablePointer<Int32>
    private let columnWeight: UnsafeMutablePointer<UInt32>
    private let maxSourceWidth: Int
    private let maxOutputWidth: Int
    private var tableFor = (source: -1, output: -1)

    /// Heap bytes made at init, for the memory plan.
    let scratchBytes: Int

    init(maxSourceWidth: Int, maxOutputWidth: Int) {
        self.maxSourceWidth = maxSourceWidth
        self.maxOutputWidth = maxOutputWidth
        row = .allocate(capacity: maxSourceWidth + 1)
        columnIndex = .allocate(capacity: maxOutputWidth)
        columnWeight = .allocate(capacity: maxOutputWidth)
        scratchBytes = (maxSourceWidth + 1) * 4 + maxOutputWidth * 8
    }

    deinit {
        row.deallocate()
        columnIndex.deallocate()
        columnWeight.deallocate()
    }

    /// Source position of output index `i` in 16.16 fixed point, clamped to `0...(src-1)`.
    @inline(__always)
    static func sourcePosition(_ i: Int, source: Int, output: Int) -> Int {
        let p = ((2 * i + 1) * source << 16) / (2 * output) - (1 << 15)
        return min(max(0, p), (source - 1) << 16)
    }

    /// The source rows output rows `y0..<y1` read (for releasing pages behind them).
    static func sourceRows(outputRows y0: Int, _ y1: Int, srcH: Int, dstH: Int) -> Range<Int> {
        let lo = sourcePosition(y0, source: srcH, output: dstH) >> 16
        let hi = min(srcH, (sourcePosition(max(y0, y1 - 1), source: srcH, output: dstH) >> 16) + 2)
        return lo..<hi
    }

    /// Scales output rows `y0..<y0+count` of a `srcW`x`srcH` → `dstW`x`dstH` picture.
    /// `src` addresses source row 0 (only the rows `sourceRows` names are read); `dst`
    /// addresses the first of the `count` output rows.
    func scale(src: UnsafePointer<UInt8>, srcStride: Int, srcW: Int, srcH: Int,
               dst: UnsafeMutablePointer<UInt8>, dstStride: Int, dstW: Int, dstH: Int,
               y0: Int, count: Int) {
        precondition(srcW <= maxSourceWidth && dstW <= maxOutputWidth)
        if tableFor != (srcW, dstW) { buildColumns(srcW: srcW, dstW: dstW) }
        let rowBytes = row.withMemoryRebound(to: UInt8.self, capacity: srcW * 4) { $0 }
        for y in y0..<(y0 + count) {
            let p = Self.sourcePosition(y, source: srcH, output: dstH)
            let top = p >> 16
            let below = min(top + 1, srcH - 1)
            let fraction = Int32((p >> 8) & 0xFF)
            ARGBInterpolate(src + top * srcStride, Int32(srcStride), src + below * srcStride, Int32(srcStride),
                            rowBytes, Int32(srcW * 4), Int32(srcW), 1, fraction)
            row[srcW] = row[srcW - 1]   // the right neighbour of the last column
            let out = UnsafeMutableRawPointer(dst + (y - y0) * dstStride).assumingMemoryBound(to: UInt32.self)
            blendColumns(into: out, count: dstW)
        }
    }

    private func buildColumns(srcW: Int, dstW: Int) {
        for x in 0..<dstW {
            let p = Self.sourcePosition(x, source: srcW, output: dstW)
            columnIndex[x] = Int32(p >> 16)
            columnWeight[x] = UInt32((p >> 8) & 0xFF)
        }
        tableFor = (srcW, dstW)
    }

    private func blendColumns(into out: UnsafeMutablePointer<UInt32>, count: Int) {
        Self.blend(row: UnsafePointer(row), index: UnsafePointer(columnIndex), weight: UnsafePointer(columnWeight),
                   out: out, count: count)
    }

    /// Two-tap blend of the interpolated row: two output pixels per step as eight 16-bit lanes
    /// (255·256 + 128 fits a lane), then one at a time for an odd width. Reading pixel i and
    /// i + 1 as one 8-byte load is why the row keeps a copy of its last pixel after its end.
    private static func blend(row: UnsafePointer<UInt32>, index: UnsafePointer<Int32>, weight: UnsafePointer<UInt32>,
                              out: UnsafeMutablePointer<UInt32>, count: Int) {
        let bytes = UnsafeRawPointer(row)
        var x = 0
        while x &+ 2 <= count {
            let i0 = Int(truncatingIfNeeded: index[x]), i1 = Int(truncatingIfNeeded: index[x &+ 1])
            let p0 = bytes.loadUnaligned(fromByteOffset: i0 &* 4, as: SIMD8<UInt8>.self)
            let p1 = bytes.loadUnaligned(fromByteOffset: i1 &* 4, as: SIMD8<UInt8>.self)
            let w0 = UInt16(truncatingIfNeeded: weight[x]), w1 = UInt16(truncatingIfNeeded: weight[x &+ 1])
            let a = SIMD8<UInt16>(truncatingIfNeeded: SIMD8<UInt8>(p0[0], p0[1], p0[2], p0[3], p1[0], p1[1], p1[2], p1[3]))
            let b = SIMD8<UInt16>(truncatingIfNeeded: SIMD8<UInt8>(p0[4], p0[5], p0[6], p0[7], p1[4], p1[5], p1[6], p1[7]))
            let w = SIMD8<UInt16>(w0, w0, w0, w0, w1, w1, w1, w1)
            let blended = (a &* (256 &- w) &+ b &* w &+ 128) &>> 8
            UnsafeMutableRawPointer(out + x).storeBytes(of: SIMD8<UInt8>(truncatingIfNeeded: blended), as: SIMD8<UInt8>.self)
            x &+= 2
        }
        if x < count {
            let i = Int(truncatingIfNeeded: index[x])
            let w = weight[x], iw = 256 &- w
            let a = row[i], b = row[i &+ 1]
            let rb = ((a & 0x00FF_00FF) &* iw &+ (b & 0x00FF_00FF) &* w &+ 0x0080_0080) >> 8
            let ga = (((a >> 8) & 0x00FF_00FF) &* iw &+ ((b >> 8) & 0x00FF_00FF) &* w &+ 0x0080_0080) >> 8
            out[x] = (rb & 0x00FF_00FF) | ((ga & 0x00FF_00FF) << 8)
        }
    }
}
