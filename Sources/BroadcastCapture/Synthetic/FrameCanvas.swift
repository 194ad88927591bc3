/// One solid colour in both pixel formats the test source paints.
struct TestColor {
    var y: UInt8, u: UInt8, v: UInt8
    var b: UInt8, g: UInt8, r: UInt8

    /// BT.601 limited-range YCbCr of an 8-bit RGB colour (computed once, never per frame).
    init(r: Int, g: Int, b: Int) {
        let rf = Double(r), gf = Double(g), bf = Double(b)
        y = UInt8(clamping: Int((16 + (65.481 * rf + 128.553 * gf + 24.966 * bf) / 255).rounded()))
        u = UInt8(clamping: Int((128 + (-37.797 * rf - 74.203 * gf + 112.0 * bf) / 255).rounded()))
        v = UInt8(clamping: Int((128 + (112.0 * rf - 93.786 * gf - 18.214 * bf) / 255).rounded()))
        self.b = UInt8(clamping: b)
        self.g = UInt8(clamping: g)
        self.r = UInt8(clamping: r)
    }

    static let white = TestColor(r: 255, g: 255, b: 255)
    static let black = TestColor(r: 0, g: 0, b: 0)
}

/// Rectangle fills into a preallocated I420 or BGRx frame: memset per row, clipped to the
/// frame. Coordinates should be even so I420 chroma lines up.
struct FrameCanvas {
    let width: Int
    let height: Int
    let isI420: Bool
    let y: UnsafeMutablePointer<UInt8>
    let u: UnsafeMutablePointer<UInt8>
    let v: UnsafeMutablePointer<UInt8>
    let strideY: Int
    let strideUV: Int

    func fill(x: Int, y top: Int, w: Int, h: Int, _ color: TestColor) {
        let x0 = max(0, x), y0 = max(0, top)
        let x1 = min(width, x + w), y1 = min(height, top + h)
        guard x1 > x0, y1 > y0 else { return }
        if isI420 {
            for row in y0..<y1 {
                (y + row * strideY + x0).update(repeating: color.y, count: x1 - x0)
            }
            let cx0 = x0 / 2, cx1 = (x1 + 1) / 2
            for row in (y0 / 2)..<((y1 + 1) / 2) {
                (u + row * strideUV + cx0).update(repeating: color.u, count: cx1 - cx0)
                (v + row * strideUV + cx0).update(repeating: color.v, count: cx1 - cx0)
            }
        } else {
            let pixel = UInt32(color.b) | UInt32(color.g) << 8 | UInt32(color.r) << 16 | 0xFF00_0000
            for row in y0..<y1 {
                let line = UnsafeMutableRawPointer(y + row * strideY)
                for px in x0..<x1 { line.storeBytes(of: pixel.littleEndian, toByteOffset: px * 4, as: UInt32.self) }
            }
        }
    }
}
