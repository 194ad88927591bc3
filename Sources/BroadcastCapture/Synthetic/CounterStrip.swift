/// Where the test source burns its machine-readable frame counter: a row of 24 square
/// blocks near the top-left corner, most significant bit first, white = 1, black = 0.
///
/// Blocks are 16x16 px on frames at least 416 px wide and shrink (to an even size, at
/// least 2 px) on narrower frames. Sixteen-pixel blocks survive lossy H.264 at any sane
/// bitrate: an analyser thresholds the mean of each block's centre at mid-grey.
public struct CounterStrip: Sendable, Equatable {
    /// Number of counter bits; the counter wraps at 2^24 frames (6.5 days at 30 fps).
    public static let bitCount = 24

    /// Left edge of the first block, in pixels.
    public let originX: Int
    /// Top edge of the blocks, in pixels.
    public let originY: Int
    /// Side of each square block, in pixels (even).
    public let blockSize: Int

    /// The layout the test source uses for a frame of this size.
    public init(width: Int, height: Int) {
        blockSize = max(2, min(16, ((width - 32) / CounterStrip.bitCount) & ~1))
        originX = blockSize
        originY = blockSize
    }

    /// The value the strip carries for frame `index`.
    public static func value(forFrame index: Int64) -> Int {
        Int(index & Int64((1 << bitCount) - 1))
    }

    /// Reads the counter back from a plane whose pixels start with a luma-like byte:
    /// the Y plane of I420 (`bytesPerPixel` 1) or a BGRx/RGBx plane (`bytesPerPixel` 4).
    public func decode(plane: UnsafeRawPointer, stride: Int, bytesPerPixel: Int = 1) -> Int {
        var value = 0
        let centreY = originY + blockSize / 2
        for bit in 0..<CounterStrip.bitCount {
            let centreX = originX + bit * blockSize + blockSize / 2
            let sample = plane.load(fromByteOffset: centreY * stride + centreX * bytesPerPixel, as: UInt8.self)
            value = (value << 1) | (sample >= 128 ? 1 : 0)
        }
        return value
    }
}
