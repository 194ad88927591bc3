import Testing
#if canImport(Glibc)
import Glibc
#endif
import CYUV
@testable import BroadcastKit

/// Bytes malloc has handed out, small blocks and mmapped large ones alike (a full-frame
/// scratch would be an mmapped block, which `uordblks` alone does not count).
private func heapBytes() -> Int {
    let m = mallinfo2()
    return Int(m.uordblks) + Int(m.hblkhd)
}

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

@Suite(.serialized) struct FrameConverterTests {
    /// A device rotating 1280x720 -> 720x1280 -> back, many times: after the first frame of each
    /// size nothing is allocated, the portrait frames are pillarboxed with black bars and the
    /// landscape ones fill the picture.
    @Test func rotationAllocatesNothingAndPaintsBlackBars() throws {
        let pool = FramePool(width: 1280, height: 720, capacity: 2)
        let converter = FrameConverter(outputWidth: 1280, outputHeight: 720)
        let landscape = FlatPicture(width: 1280, height: 720, bgrx: (255, 255, 255))   // white
        let portrait = FlatPicture(width: 720, height: 1280, bgrx: (255, 255, 255))
        var pts: Int64 = 1
        var heapAfterFirstOfEach = 0
        for i in 0..<40 {
            let slot = i % 2
            let dst = pool.frame(slot)
            let pic = i % 2 == 0 ? landscape : portrait
            let frame = pic.frame(pts: pts)
            pts += 33_000_000
            let geo = LetterboxGeometry.fit(srcW: frame.width, srcH: frame.height, dstW: dst.width, dstH: dst.height)
            if pool.needsBorderRepaint(slot: slot, geometry: geo) { FrameConverter.fillBlack(dst) }
            converter.convert(frame, into: dst)
            if i == 1 { heapAfterFirstOfEach = heapBytes() }
            if i >= 2 {
                #expect(heapBytes() <= heapAfterFirstOfEach, "frame \(i) allocated \(heapBytes() - heapAfterFirstOfEach) bytes")
            }
            if i >= 2 {
                let y = dst.y, u = dst.u
                if pic === portrait {
                    // 720x1280 into 1280x720: a 404 px wide picture centred, bars of 438 px.
                    #expect(geo == LetterboxGeometry(x: 438, y: 0, width: 404, height: 720))
                    for row in [0, 360, 719] {
                        #expect(y[row * dst.strideY + 10] == 16, "left bar luma at row \(row)")
                        #expect(y[row * dst.strideY + 1270] == 16, "right bar luma at row \(row)")
                        #expect(y[row * dst.strideY + 640] >= 230, "picture luma at row \(row)")
                        #expect(u[(row / 2) * dst.strideUV + 5] == 128, "left bar chroma at row \(row)")
                    }
                } else {
                    for row in [0, 360, 719] {
                        #expect(y[row * dst.strideY + 10] >= 230, "landscape fills the picture at row \(row)")
                        #expect(y[row * dst.strideY + 1270] >= 230)
                    }
                }
            }
        }
    }

    /// Striped scaling gives the same picture as libyuv scaling the whole frame at once.
    @Test func stripedScalingMatchesWholeFrameScaling() throws {
        let w = 1000, h = 700
        let src = UnsafeMutableRawBufferPointer.allocate(byteCount: w * h * 4, alignment: 64)
        defer { src.deallocate() }
        var seed: UInt32 = 1
        for i in 0..<src.count { seed = seed &* 1_103_515_245 &+ 12345; src[i] = UInt8(truncatingIfNeeded: seed >> 24) }
        let pool = FramePool(width: 640, height: 360, capacity: 1)
        let dst = pool.frame(0)
        let converter = FrameConverter(outputWidth: 640, outputHeight: 360)
        let geo = converter.convert(VideoFrame(packed: .bgrx, width: w, height: h, stride: w * 4,
                                               bytes: UnsafeRawBufferPointer(src), pts: 1), into: dst)
        // Reference: one ARGBScale of the whole frame, then ARGBToI420.
        let argb = UnsafeMutableRawBufferPointer.allocate(byteCount: geo.width * geo.height * 4, alignment: 64)
        let ref = UnsafeMutableRawBufferPointer.allocate(byteCount: I420Frame.byteCount(width: geo.width, height: geo.height),
                                                         alignment: 64)
        defer { argb.deallocate(); ref.deallocate() }
        let a = argb.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let r = ref.baseAddress!.assumingMemoryBound(to: UInt8.self)
        ARGBScale(src.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(w * 4), Int32(w), Int32(h),
                  a, Int32(geo.width * 4), Int32(geo.width), Int32(geo.height), kFilterBilinear)
        let cw = geo.width / 2
        ARGBToI420(a, Int32(geo.width * 4), r, Int32(geo.width), r + geo.width * geo.height, Int32(cw),
                   r + geo.width * geo.height + cw * geo.height / 2, Int32(cw), Int32(geo.width), Int32(geo.height))
        var diffs = 0
        for row in 0..<geo.height {
            for col in 0..<geo.width where dst.y[(geo.y + row) * dst.strideY + geo.x + col] != r[row * geo.width + col] {
                diffs += 1
            }
        }
        #expect(diffs == 0, "\(diffs) luma samples differ from whole-frame scaling")
    }
}
