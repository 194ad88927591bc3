#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// Paints the test source's picture into one preallocated frame, owned by the video lane.
///
/// The moving background is cheap: colour bars (top two thirds) scroll left and a grey ramp
/// (bottom third) scrolls right by copying each row out of precomputed pattern rows twice the
/// frame width, so a frame costs one memcpy per row. The `.moving` kind adds a band of fresh
/// noise (`MovingRegion`) across the lower half of the bars. On top: the binary `CounterStrip`
/// and six 7-segment digits. Flash frames are solid white (Y 235 / BGRx 0xFF) with only the strip.
///
/// The picture lives in a `FrameStorage` that may be shared with the painter of the other
/// orientation (see `RotationSchedule`); only one of them renders at a time.
final class TestPattern {
    let width: Int
    let height: Int
    let format: PixelFormat
    let kind: TestPatternKind
    let strip: CounterStrip
    let region: MovingRegion
    private let digits: SevenSegment
    /// Horizontal scroll per frame in pixels (even, for I420 chroma).
    private static let scrollStep = 4

    private let storage: FrameStorage
    private let canvas: FrameCanvas
    private let barsRows: Int
    // Pattern rows, each covering two frame widths (I420: Y at full, U/V at half width;
    // BGRx: 4 bytes per pixel in `barsY`/`rampY`).
    private let barsY: UnsafeMutableRawBufferPointer
    private let barsU: UnsafeMutableRawBufferPointer
    private let barsV: UnsafeMutableRawBufferPointer
    private let rampY: UnsafeMutableRawBufferPointer

    private let lumaSize: Int
    private let chromaSize: Int

    /// Bytes of one frame of this size and format (the same for WxH and HxW).
    static func frameBytes(width: Int, height: Int, format: PixelFormat) -> Int {
        format == .i420 ? width * height + 2 * (width / 2) * (height / 2) : width * 4 * height
    }

    /// `storage` must hold `frameBytes(...)`; nil allocates a private one.
    init(width: Int, height: Int, format: PixelFormat, kind: TestPatternKind = .moving,
         storage: FrameStorage? = nil) {
        self.width = width
        self.height = height
        self.format = format
        self.kind = kind
        strip = CounterStrip(width: width, height: height)
        digits = SevenSegment(frameHeight: height)
        barsRows = height * 2 / 3 & ~1
        region = MovingRegion(barsRows: barsRows)
        let isI420 = format == .i420
        let chromaWidth = width / 2
        if isI420 {
            lumaSize = width * height
            chromaSize = chromaWidth * (height / 2)
        } else {
            lumaSize = width * 4 * height
            chromaSize = 0
        }
        let needed = TestPattern.frameBytes(width: width, height: height, format: format)
        precondition(storage.map { $0.bytes.count >= needed } ?? true, "frame storage too small")
        self.storage = storage ?? FrameStorage(byteCount: needed)
        let base = self.storage.bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
        canvas = FrameCanvas(width: width, height: height, isI420: isI420,
                             y: base, u: base + lumaSize, v: base + lumaSize + chromaSize,
                             strideY: isI420 ? width : width * 4, strideUV: isI420 ? chromaWidth : 0)

        let bytesPerPixel = isI420 ? 1 : 4
        barsY = .allocate(byteCount: 2 * width * bytesPerPixel, alignment: 64)
        rampY = .allocate(byteCount: 2 * width * bytesPerPixel, alignment: 64)
        barsU = .allocate(byteCount: isI420 ? width : 0, alignment: 64)
        barsV = .allocate(byteCount: isI420 ? width : 0, alignment: 64)
        let bars = [TestColor(r: 191, g: 191, b: 191), TestColor(r: 191, g: 191, b: 0),
                    TestColor(r: 0, g: 191, b: 191), TestColor(r: 0, g: 191, b: 0),
                    TestColor(r: 191, g: 0, b: 191), TestColor(r: 191, g: 0, b: 0),
                    TestColor(r: 0, g: 0, b: 191), TestColor(r: 16, g: 16, b: 16)]
        for x in 0..<(2 * width) {
            let bar = bars[(x % width) * bars.count / width]
            let grey = (x % width) * 255 / width
            if isI420 {
                barsY[x] = bar.y
                rampY[x] = UInt8(16 + grey * 219 / 255)
                if x % 2 == 0 {
                    barsU[x / 2] = bar.u
                    barsV[x / 2] = bar.v
                }
            } else {
                let o = x * 4
                barsY[o] = bar.b; barsY[o + 1] = bar.g; barsY[o + 2] = bar.r; barsY[o + 3] = 0xFF
                rampY[o] = UInt8(grey); rampY[o + 1] = UInt8(grey); rampY[o + 2] = UInt8(grey); rampY[o + 3] = 0xFF
            }
        }
    }

    deinit {
        barsY.deallocate()
        barsU.deallocate()
        barsV.deallocate()
        rampY.deallocate()
    }

    /// Frame `index` is a flash (solid white) when it falls on a whole second k >= 1.
    static func isFlash(frame index: Int64, fps: Int) -> Bool {
        index > 0 && index % Int64(fps) == 0
    }

    /// Paints frame `index` into the preallocated buffer.
    func render(frame index: Int64, flash: Bool) {
        if flash {
            if format == .i420 {
                memset(canvas.y, 235, lumaSize)
                memset(canvas.u, 128, 2 * chromaSize)
            } else {
                memset(canvas.y, 0xFF, lumaSize)
            }
        } else {
            drawBackground(frame: index)
            if kind == .moving { region.paint(canvas, frame: index) }
            drawDigits(frame: index)
        }
        drawStrip(frame: index)
    }

    private func drawBackground(frame index: Int64) {
        let offset = Int(index % Int64(width / TestPattern.scrollStep)) * TestPattern.scrollStep
        let rampOffset = (width - offset) % width
        if format == .i420 {
            let chromaWidth = width / 2
            for row in 0..<height {
                let src = row < barsRows ? barsY.baseAddress! + offset : rampY.baseAddress! + rampOffset
                memcpy(canvas.y + row * width, src, width)
            }
            for row in 0..<(height / 2) {
                if row * 2 < barsRows {
                    memcpy(canvas.u + row * chromaWidth, barsU.baseAddress! + offset / 2, chromaWidth)
                    memcpy(canvas.v + row * chromaWidth, barsV.baseAddress! + offset / 2, chromaWidth)
                } else {
                    memset(canvas.u + row * chromaWidth, 128, chromaWidth)
                    memset(canvas.v + row * chromaWidth, 128, chromaWidth)
                }
            }
        } else {
            let rowBytes = width * 4
            for row in 0..<height {
                let src = row < barsRows ? barsY.baseAddress! + offset * 4 : rampY.baseAddress! + rampOffset * 4
                memcpy(canvas.y + row * rowBytes, src, rowBytes)
            }
        }
    }

    private func drawStrip(frame index: Int64) {
        let value = CounterStrip.value(forFrame: index)
        let s = strip.blockSize
        for bit in 0..<CounterStrip.bitCount {
            let on = (value >> (CounterStrip.bitCount - 1 - bit)) & 1 == 1
            canvas.fill(x: strip.originX + bit * s, y: strip.originY, w: s, h: s, on ? .white : .black)
        }
    }

    private func drawDigits(frame index: Int64) {
        let d = digits
        let left = strip.originX
        let top = strip.originY + strip.blockSize * 2
        canvas.fill(x: left - d.thickness, y: top - d.thickness,
                    w: d.totalWidth + 2 * d.thickness, h: d.height + 2 * d.thickness, .black)
        var rest = Int(index % 1_000_000)
        // Right to left, so no String is built per frame.
        for position in stride(from: SevenSegment.digitCount - 1, through: 0, by: -1) {
            let mask = SevenSegment.masks[rest % 10]
            rest /= 10
            let x = left + position * (d.width + d.gap)
            for segment in 0..<7 where mask & (1 << segment) != 0 {
                let (sx, sy, sw, sh) = d.segment(segment)
                canvas.fill(x: x + sx, y: top + sy, w: sw, h: sh, .white)
            }
        }
    }

    /// The painted frame as a borrowed `VideoFrame` with explicit strides and plane sizes.
    func videoFrame(pts: Int64) -> VideoFrame {
        if format == .i420 {
            return VideoFrame(width: width, height: height, format: .i420,
                              planes: (UnsafeRawPointer(canvas.y), UnsafeRawPointer(canvas.u), UnsafeRawPointer(canvas.v)),
                              strides: (width, width / 2, width / 2),
                              planeSizes: (lumaSize, chromaSize, chromaSize), pts: pts)
        }
        return VideoFrame(packed: .bgrx, width: width, height: height, stride: width * 4,
                          bytes: UnsafeRawBufferPointer(start: canvas.y, count: lumaSize), pts: pts)
    }
}
