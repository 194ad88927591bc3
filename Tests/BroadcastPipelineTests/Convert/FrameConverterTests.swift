import Testing
#if canImport(Glibc)
import Glibc
#endif
import CYUV
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// A packed BGRx picture of one flat colour.
private final class FlatPicture {
    let width: Int, height: Int
    let bytes: UnsafeMutableRawBufferPointer
    init(width: Int, height: Int, bgrx: (UInt8, UInt8, UInt8)) {
        self.width = width
        self.height = height
        bytes = .allocate(byteCount: width * height * 4, alignment: 64)
        for i in 0..<(width * height) {
            bytes[4 * i] = bgrx.0; bytes[4 * i + 1] = bgrx.1; bytes[4 * i + 2] = bgrx.2; bytes[4 * i + 3] = 255
        }
    }
    deinit { bytes.deallocate() }
    func frame(pts: Int64) -> VideoFrame {
        VideoFrame(packed: .bgrx, width: width, height: height, stride: width * 4,
                   bytes: UnsafeRawBufferPointer(bytes), pts: pts)
    }
}

@Suite(.timeLimit(.minutes(5)), .serialized) struct FrameConverterTests {
    /// A device rotating 1280x720 -> 720x1280 -> back, many times: after the first frame of each
    /// size nothing is allocated, the portrait frames are pillarboxed with black bars and the
    /// landscape ones fill the picture.
    @Test(.enabled(if: AllocationCounter.isLoaded, "needs tools/allocshim preloaded (scripts/test does it)"))
    func rotationAllocatesNothingAndPaintsBlackBars() throws {
        let pool = FramePool(width: 1280, height: 720, capacity: 2)
        let converter = FrameConverter(outputWidth: 1280, outputHeight: 720)
        let landscape = FlatPicture(width: 1280, height: 720, bgrx: (255, 255, 255))   // white
        let portrait = FlatPicture(width: 720, height: 1280, bgrx: (255, 255, 255))
        var pts: Int64 = 1
        // This thread's allocation count after each frame and the luma/chroma samples to check,
        // written into storage made up front: nothing in the loop may allocate but the converter.
        let frames = 40
        var allocations = [UInt64](repeating: 0, count: frames)
        var samples = [UInt8](repeating: 0, count: frames * 12)
        var geometries = [LetterboxGeometry](repeating: LetterboxGeometry(x: 0, y: 0, width: 0, height: 0), count: frames)
        let rows = [0, 360, 719]
        for i in 0..<frames {
            let slot = i % 2
            let dst = pool.frame(slot)
            let frame = (i % 2 == 0 ? landscape : portrait).frame(pts: pts)
            pts += 33_000_000
            let geo = LetterboxGeometry.fit(srcW: frame.width, srcH: frame.height, dstW: dst.width, dstH: dst.height)
            if pool.needsBorderRepaint(slot: slot, geometry: geo) { FrameConverter.fillBlack(dst) }
            converter.convert(frame, into: dst)
            allocations[i] = AllocationCounter.thisThread()
            geometries[i] = geo
            for n in 0..<3 {
                let row = rows[n]
                samples[i * 12 + n * 4 + 0] = dst.y[row * dst.strideY + 10]      // left edge / bar
                samples[i * 12 + n * 4 + 1] = dst.y[row * dst.strideY + 1270]    // right edge / bar
                samples[i * 12 + n * 4 + 2] = dst.y[row * dst.strideY + 640]     // centre
                samples[i * 12 + n * 4 + 3] = dst.u[(row / 2) * dst.strideUV + 5]
            }
        }
        for i in 2..<frames {
            #expect(allocations[i] == allocations[1], "frame \(i): \(allocations[i] - allocations[1]) allocations after the first frame of each size")
            for n in 0..<3 {
                let s = samples[(i * 12 + n * 4)..<(i * 12 + n * 4 + 4)].map { Int($0) }
                if i % 2 == 1 {
                    // 720x1280 into 1280x720: a 404 px wide picture centred, black bars of 438 px.
                    #expect(geometries[i] == LetterboxGeometry(x: 438, y: 0, width: 404, height: 720))
                    #expect(s[0] == 16 && s[1] == 16 && s[3] == 128, "bars must be black: \(s)")
                    #expect(s[2] >= 230, "picture must be white: \(s)")
                } else {
                    #expect(s[0] >= 230 && s[1] >= 230 && s[2] >= 230, "landscape fills the picture: \(s)")
                }
            }
        }
    }

    /// Striped scaling gives the picture of a bilinear scale of the whole frame at once (within
    /// rounding), down and up, for packed input read in place and for planar input expanded stripe by stripe.
    @Test(arguments: [PixelFormat.bgrx, .nv12, .i420], [(1000, 700), (334, 188)])
    func stripedScalingMatchesWholeFrameScaling(format: PixelFormat, size: (Int, Int)) throws {
        let (w, h) = size   // down by 1.56 and up by 1.92 into 640x360
        let src = UnsafeMutableRawBufferPointer.allocate(byteCount: w * h * 4, alignment: 64)
        defer { src.deallocate() }
        var seed: UInt32 = 1
        for i in 0..<src.count { seed = seed &* 1_103_515_245 &+ 12345; src[i] = UInt8(truncatingIfNeeded: seed >> 24) }
        let base = UnsafeRawPointer(src.baseAddress!)
        let uvPlane: UnsafeRawPointer? = base + w * h
        let vPlane: UnsafeRawPointer? = base + w * h + w * h / 4
        let frame: VideoFrame
        switch format {
        case .nv12:
            frame = VideoFrame(width: w, height: h, format: .nv12, planes: (base, uvPlane, nil),
                               strides: (w, w, 0), planeSizes: (w * h, w * h / 2, 0), pts: 1)
        case .i420:
            frame = VideoFrame(width: w, height: h, format: .i420,
                               planes: (base, uvPlane, vPlane),
                               strides: (w, w / 2, w / 2), planeSizes: (w * h, w * h / 4, w * h / 4), pts: 1)
        default:
            frame = VideoFrame(packed: .bgrx, width: w, height: h, stride: w * 4, bytes: UnsafeRawBufferPointer(src), pts: 1)
        }
        #expect(frame.validate() == nil)
        let pool = FramePool(width: 640, height: 360, capacity: 1)
        let dst = pool.frame(0)
        let geo = FrameConverter(outputWidth: 640, outputHeight: 360).convert(frame, into: dst)
        // Reference: the whole source as ARGB, scaled in one pass by a floating-point bilinear
        // filter written here (centre-aligned, as documented on ARGBStripeScaler), then
        // ARGBToI420. The converter works in stripes with 8-bit fractions, so it may differ by
        // rounding; a stripe that read the wrong source rows differs by far more on this noise.
        let whole = UnsafeMutableRawBufferPointer.allocate(byteCount: w * h * 4, alignment: 64)
        let argb = UnsafeMutableRawBufferPointer.allocate(byteCount: geo.width * geo.height * 4, alignment: 64)
        let ref = UnsafeMutableRawBufferPointer.allocate(byteCount: I420Frame.byteCount(width: geo.width, height: geo.height),
                                                         alignment: 64)
        defer { whole.deallocate(); argb.deallocate(); ref.deallocate() }
        let full = whole.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let s8 = base.assumingMemoryBound(to: UInt8.self)
        switch format {
        case .nv12: NV12ToARGB(s8, Int32(w), s8 + w * h, Int32(w), full, Int32(w * 4), Int32(w), Int32(h))
        case .i420: I420ToARGB(s8, Int32(w), s8 + w * h, Int32(w / 2), s8 + w * h + w * h / 4, Int32(w / 2),
                               full, Int32(w * 4), Int32(w), Int32(h))
        default: whole.copyMemory(from: UnsafeRawBufferPointer(src))
        }
        let a = argb.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let r = ref.baseAddress!.assumingMemoryBound(to: UInt8.self)
        func position(_ i: Int, _ n: Int, _ size: Int) -> (Int, Int, Double) {
            let p = min(max(0, (Double(i) + 0.5) * Double(size) / Double(n) - 0.5), Double(size - 1))
            let i0 = Int(p)
            return (i0, min(i0 + 1, size - 1), p - Double(i0))
        }
        for y in 0..<geo.height {
            let (y0, y1, fy) = position(y, geo.height, h)
            for x in 0..<geo.width {
                let (x0, x1, fx) = position(x, geo.width, w)
                for c in 0..<4 {
                    func px(_ xx: Int, _ yy: Int) -> Double { Double(full[yy * w * 4 + xx * 4 + c]) }
                    let top = px(x0, y0) * (1 - fx) + px(x1, y0) * fx
                    let bottom = px(x0, y1) * (1 - fx) + px(x1, y1) * fx
                    a[(y * geo.width + x) * 4 + c] = UInt8((top * (1 - fy) + bottom * fy).rounded())
                }
            }
        }
        let cw = geo.width / 2
        ARGBToI420(a, Int32(geo.width * 4), r, Int32(geo.width), r + geo.width * geo.height, Int32(cw),
                   r + geo.width * geo.height + cw * geo.height / 2, Int32(cw), Int32(geo.width), Int32(geo.height))
        var diffs = 0, worst = 0
        for row in 0..<geo.height {
            for col in 0..<geo.width {
                let d = abs(Int(dst.y[(geo.y + row) * dst.strideY + geo.x + col]) - Int(r[row * geo.width + col]))
                worst = max(worst, d)
                if d > 3 { diffs += 1 }
            }
        }
        #expect(diffs == 0, "\(diffs) luma samples differ from whole-frame bilinear scaling by more than 3 (worst \(worst))")
    }
}
