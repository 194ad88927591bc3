import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// The 75% colour bars (white, yellow, cyan, green, magenta, red, blue, black) as 8-bit RGB.
private let bars: [(r: Int, g: Int, b: Int)] = {
    let on = 191   // 75% of 255
    return [(on, on, on), (on, on, 0), (0, on, on), (0, on, 0), (on, 0, on), (on, 0, 0), (0, 0, on), (0, 0, 0)]
}()

/// BT.601 limited-range Y'CbCr of an 8-bit R'G'B' colour, from the Rec. 601 definitions
/// (Kr 0.299, Kb 0.114; luma 219 levels from 16, chroma 224 levels around 128). This is what
/// the encoder signals in its VUI (matrix smpte170m, limited range), worked out here
/// independently of libyuv.
private func bt601(_ c: (r: Int, g: Int, b: Int)) -> (y: Double, u: Double, v: Double) {
    let r = Double(c.r), g = Double(c.g), b = Double(c.b)
    let ey = 0.299 * r + 0.587 * g + 0.114 * b
    return (16 + 219 * ey / 255,
            128 + 224 * (b - ey) / (2 * (1 - 0.114)) / 255,
            128 + 224 * (r - ey) / (2 * (1 - 0.299)) / 255)
}

/// A picture of the eight bars side by side, `width` / 8 pixels each, in any accepted format.
private final class BarsPicture {
    let width: Int, height: Int, format: PixelFormat
    private let bytes: UnsafeMutableRawBufferPointer

    init(width: Int, height: Int, format: PixelFormat) {
        self.width = width
        self.height = height
        self.format = format
        bytes = .allocate(byteCount: width * height * 4, alignment: 64)
        bytes.initializeMemory(as: UInt8.self, repeating: 0)
        let barWidth = width / bars.count
        func bar(_ x: Int) -> (r: Int, g: Int, b: Int) { bars[min(x / barWidth, bars.count - 1)] }
        switch format {
        case .bgra, .bgrx, .rgba, .rgbx:
            for y in 0..<height {
                for x in 0..<width {
                    let c = bar(x), p = (y * width + x) * 4
                    let rgbFirst = format == .rgba || format == .rgbx
                    bytes[p] = UInt8(rgbFirst ? c.r : c.b)
                    bytes[p + 1] = UInt8(c.g)
                    bytes[p + 2] = UInt8(rgbFirst ? c.b : c.r)
                    // Alpha is ignored; padding bytes may hold anything.
                    bytes[p + 3] = format == .bgra || format == .rgba ? 255 : 0x5A
                }
            }
        case .nv12, .i420:
            let lumaSize = width * height
            for y in 0..<height {
                for x in 0..<width { bytes[y * width + x] = UInt8(bt601(bar(x)).y.rounded()) }
            }
            let cw = width / 2
            for row in 0..<(height / 2) {
                for cx in 0..<cw {
                    let c = bt601(bar(cx * 2))
                    let u = UInt8(c.u.rounded()), v = UInt8(c.v.rounded())
                    if format == .nv12 {
                        bytes[lumaSize + row * width + 2 * cx] = u
                        bytes[lumaSize + row * width + 2 * cx + 1] = v
                    } else {
                        bytes[lumaSize + row * cw + cx] = u
                        bytes[lumaSize + lumaSize / 4 + row * cw + cx] = v
                    }
                }
            }
        }
    }

    deinit { bytes.deallocate() }

    var frame: VideoFrame {
        let base = UnsafeRawPointer(bytes.baseAddress!)
        let lumaSize = width * height
        switch format {
        case .nv12:
            return VideoFrame(width: width, height: height, format: .nv12, planes: (base, base + lumaSize, nil),
                              strides: (width, width, 0), planeSizes: (lumaSize, lumaSize / 2, 0), pts: 1)
        case .i420:
            return VideoFrame(width: width, height: height, format: .i420,
                              planes: (base, base + lumaSize, base + lumaSize + lumaSize / 4),
                              strides: (width, width / 2, width / 2), planeSizes: (lumaSize, lumaSize / 4, lumaSize / 4), pts: 1)
        default:
            return VideoFrame(packed: format, width: width, height: height, stride: width * 4,
                              bytes: UnsafeRawBufferPointer(bytes), pts: 1)
        }
    }
}

@Suite(.timeLimit(.minutes(2))) struct ColourConversionTests {
    /// Each bar's centre, converted to I420 by FrameConverter, holds the BT.601 limited-range
    /// Y/U/V of its colour within ±2, for every input format, at the output size (converted in
    /// place) and from twice the size (scaled in ARGB, planar input expanded to ARGB first).
    @Test(arguments: PixelFormat.allCases, [false, true])
    func colourBarsConvertToBT601LimitedRange(format: PixelFormat, scaled: Bool) throws {
        let outW = 320, outH = 96
        let picture = BarsPicture(width: scaled ? outW * 2 : outW, height: scaled ? outH * 2 : outH, format: format)
        let frame = picture.frame
        #expect(frame.validate() == nil)
        let pool = FramePool(width: outW, height: outH, capacity: 1)
        let dst = pool.frame(0)
        let geo = FrameConverter(outputWidth: outW, outputHeight: outH).convert(frame, into: dst)
        #expect(geo == LetterboxGeometry(x: 0, y: 0, width: outW, height: outH))
        let barWidth = outW / bars.count
        var worst = 0.0
        for (i, colour) in bars.enumerated() {
            let want = bt601(colour)
            let x = i * barWidth + barWidth / 2, y = outH / 2
            let got = (y: Double(dst.y[y * dst.strideY + x]),
                       u: Double(dst.u[(y / 2) * dst.strideUV + x / 2]),
                       v: Double(dst.v[(y / 2) * dst.strideUV + x / 2]))
            let d = max(abs(got.y - want.y), abs(got.u - want.u), abs(got.v - want.v))
            worst = max(worst, d)
            #expect(d <= 2, "\(format) \(scaled ? "scaled" : "same size") bar \(i) \(colour): got Y/U/V \(got), BT.601 limited gives \(want)")
        }
        #expect(worst <= 2)
    }

    /// The formula itself, against the published BT.601 values for 75% bars (ITU-R BT.801):
    /// so a mistake in `bt601` cannot make the test above agree with a wrong converter.
    @Test func formulaMatchesPublishedBarValues() {
        // Y, Cb, Cr of 75% white, yellow, cyan, green, magenta, red, blue, black (8-bit).
        let published: [(Double, Double, Double)] = [(180, 128, 128), (162, 44, 142), (131, 156, 44), (112, 72, 58),
                                                     (84, 184, 198), (65, 100, 212), (35, 212, 114), (16, 128, 128)]
        for (colour, p) in zip(bars, published) {
            let c = bt601(colour)
            #expect(abs(c.y - p.0) <= 1 && abs(c.u - p.1) <= 1 && abs(c.v - p.2) <= 1, "\(colour): \(c) vs \(p)")
        }
    }
}
