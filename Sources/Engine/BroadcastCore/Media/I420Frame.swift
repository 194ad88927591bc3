/// A planar 4:2:0 picture at the output resolution: what the video encoder consumes.
///
/// It points into pooled memory (see `FramePool`); it does not own it.
package struct I420Frame: @unchecked Sendable {
    package var width: Int
    package var height: Int
    package var y: UnsafeMutablePointer<UInt8>
    package var u: UnsafeMutablePointer<UInt8>
    package var v: UnsafeMutablePointer<UInt8>
    package var strideY: Int
    package var strideUV: Int

    package init(width: Int, height: Int, y: UnsafeMutablePointer<UInt8>, u: UnsafeMutablePointer<UInt8>,
                v: UnsafeMutablePointer<UInt8>, strideY: Int, strideUV: Int) {
        self.width = width
        self.height = height
        self.y = y
        self.u = u
        self.v = v
        self.strideY = strideY
        self.strideUV = strideUV
    }

    /// Bytes needed for one frame of this size with tight strides.
    package static func byteCount(width: Int, height: Int) -> Int {
        width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2)
    }
}
