#if canImport(Glibc)
import Glibc
#endif
import CYUV
import BroadcastCore

/// Converts any accepted input (BGRA/BGRx/RGBA/RGBx/NV12/I420, any size and stride) into an
/// output-sized I420 picture with libyuv, letterboxing or pillarboxing to keep the aspect ratio.
///
/// The source is read in horizontal stripes of about `sourceStripeBytes`, top to bottom, so a
/// frame whose pages may be released (`VideoFrame.sourcePagesReleasable`, a PipeWire memfd) keeps
/// only a stripe or two resident: each consumed stripe is dropped with `MADV_DONTNEED`.
/// - Same size: converted stripe by stripe straight into the destination.
/// - Other sizes: each stripe of output rows is scaled bilinearly by `ARGBStripeScaler` (which
///   reads only the source rows that output stripe needs) into a small ARGB stripe, then
///   converted to I420. Planar input is first expanded to ARGB for just those source rows, in a
///   fixed row buffer.
///
/// Every buffer is allocated once, at init, for the fixed output size and the largest input
/// (8192 px wide): a size change mid-stream (a rotated device) allocates nothing.
package final class FrameConverter: @unchecked Sendable {
    let outputWidth: Int
    let outputHeight: Int

    /// Source bytes a stripe aims to read; with the rows a scaler's filter overlaps and the
    /// kernel's fault-around, a releasable frame keeps about 0.5 MB resident at any size.
    static let sourceStripeBytes = 256 << 10
    /// Output rows scaled per stripe, at most (even: I420 chroma rows pair up).
    static let maxOutputStripeRows = 16
    /// Source rows beyond the computed span a stripe may also hold (the bilinear filter's
    /// second row and the even alignment of planar chroma).
    static let filterMarginRows = 2
    /// Widest source the converter accepts (as `VideoFrame.validate`).
    static let maxSourceWidth = 8192

    /// Upper bound of what converting one releasable frame keeps resident of its source, for
    /// any size up to 8192 wide and any number of producer buffers (the rest is released):
    /// a stripe, the filter's overlap rows at the widest stride, and per plane a partial page
    /// at each end plus the kernel's 64 KB fault-around window.
    package static let maxSourceResidentBytes =
        sourceStripeBytes + (2 * filterMarginRows + 2) * maxSourceWidth * 4 + 3 * (2 * 4096 + (64 << 10))

    /// One ARGB stripe of output rows (scaled, before conversion to I420).
    private let outStripe: UnsafeMutableRawBufferPointer
    private let outStripeStride: Int
    /// Planar input expanded to ARGB, only the source rows one output stripe reads.
    private let rowBuffer: UnsafeMutableRawBufferPointer
    private let scaler: ARGBStripeScaler

    /// Scratch bytes this converter allocated (virtual; only the rows actually used become
    /// resident), for the memory plan.
    var scratchBytes: Int { outStripe.count + rowBuffer.count + scaler.scratchBytes }

    package init(outputWidth: Int, outputHeight: Int) {
        self.outputWidth = outputWidth
        self.outputHeight = outputHeight
        outStripeStride = (outputWidth * 4 + 63) & ~63
        outStripe = .allocate(byteCount: outStripeStride * Self.maxOutputStripeRows, alignment: 64)
        rowBuffer = .allocate(byteCount: Self.sourceStripeBytes + (2 * Self.filterMarginRows + 4) * Self.maxSourceWidth * 4,
                              alignment: 64)
        scaler = ARGBStripeScaler(maxSourceWidth: Self.maxSourceWidth, maxOutputWidth: outputWidth)
    }

    deinit {
        outStripe.deallocate()
        rowBuffer.deallocate()
    }

    /// Fills the whole destination with black (Y 16, U/V 128): borders of a letterboxed picture.
    static func fillBlack(_ dst: I420Frame) {
        for row in 0..<dst.height { (dst.y + row * dst.strideY).update(repeating: 16, count: dst.width) }
        let cw = (dst.width + 1) / 2, ch = (dst.height + 1) / 2
        for row in 0..<ch {
            (dst.u + row * dst.strideUV).update(repeating: 128, count: cw)
            (dst.v + row * dst.strideUV).update(repeating: 128, count: cw)
        }
    }

    /// Converts `frame` into `dst` (output size). Returns the letterbox rectangle used, so the
    /// caller can repaint borders when it changes. `frame` must already be validated.
    @discardableResult
    package func convert(_ frame: VideoFrame, into dst: I420Frame) -> LetterboxGeometry {
        let geo = LetterboxGeometry.fit(srcW: frame.width, srcH: frame.height, dstW: dst.width, dstH: dst.height)
        var release = SourceRelease(frame)
        if geo.width == frame.width && geo.height == frame.height {
            convertSameSize(frame, into: offset(dst, geo), release: &release)
        } else {
            convertScaled(frame, into: offset(dst, geo), release: &release)
        }
        release.finish()
        return geo
    }

    private func offset(_ dst: I420Frame, _ geo: LetterboxGeometry) -> I420Frame {
        I420Frame(width: geo.width, height: geo.height,
                  y: dst.y + geo.y * dst.strideY + geo.x,
                  u: dst.u + (geo.y / 2) * dst.strideUV + geo.x / 2,
                  v: dst.v + (geo.y / 2) * dst.strideUV + geo.x / 2,
                  strideY: dst.strideY, strideUV: dst.strideUV)
    }

    // MARK: same size

    private func convertSameSize(_ f: VideoFrame, into d: I420Frame, release: inout SourceRelease) {
        let rows = max(2, (Self.sourceStripeBytes / max(1, f.stride(0))) & ~1)
        var y0 = 0
        while y0 < f.height {
            let n = min(rows, f.height - y0)
            convertRows(f, from: y0, count: n, into: d)
            y0 += n
            release.release(belowRow: y0)
        }
    }

    /// Converts source rows `y0..<y0+n` (y0 even) into the same rows of `d`.
    private func convertRows(_ f: VideoFrame, from y0: Int, count n: Int, into d: I420Frame) {
        let w = Int32(f.width), h = Int32(n)
        let p0 = f.plane(0)!.assumingMemoryBound(to: UInt8.self) + y0 * f.stride(0)
        let dy = d.y + y0 * d.strideY, du = d.u + (y0 / 2) * d.strideUV, dv = d.v + (y0 / 2) * d.strideUV
        let sY = Int32(d.strideY), sUV = Int32(d.strideUV)
        switch f.format {
        case .bgra, .bgrx:
            // libyuv's "ARGB" is B,G,R,A in memory.
            ARGBToI420(p0, Int32(f.stride(0)), dy, sY, du, sUV, dv, sUV, w, h)
        case .rgba, .rgbx:
            ABGRToI420(p0, Int32(f.stride(0)), dy, sY, du, sUV, dv, sUV, w, h)
        case .nv12:
            let uv = f.plane(1)!.assumingMemoryBound(to: UInt8.self) + (y0 / 2) * f.stride(1)
            NV12ToI420(p0, Int32(f.stride(0)), uv, Int32(f.stride(1)), dy, sY, du, sUV, dv, sUV, w, h)
        case .i420:
            let u = f.plane(1)!.assumingMemoryBound(to: UInt8.self) + (y0 / 2) * f.stride(1)
            let v = f.plane(2)!.assumingMemoryBound(to: UInt8.self) + (y0 / 2) * f.stride(2)
            I420Copy(p0, Int32(f.stride(0)), u, Int32(f.stride(1)), v, Int32(f.stride(2)),
                     dy, sY, du, sUV, dv, sUV, w, h)
        }
    }

    // MARK: scaled

    /// Source rows (luma) that output rows `y0..<y1` of a `srcH -> dstH` scale read.
    static func sourceRows(outputRows y0: Int, _ y1: Int, srcH: Int, dstH: Int) -> Range<Int> {
        ARGBStripeScaler.sourceRows(outputRows: y0, y1, srcH: srcH, dstH: dstH)
    }

    private func convertScaled(_ f: VideoFrame, into d: I420Frame, release: inout SourceRelease) {
        let packed = f.format.planeCount == 1
        let srcStride = packed ? f.stride(0) : f.width * 4
        // Output rows per stripe so that the source rows behind them stay near sourceStripeBytes.
        let bytesPerOutRow = max(1, srcStride * f.height / max(1, d.height))
        var k = min(Self.maxOutputStripeRows, max(2, (Self.sourceStripeBytes / bytesPerOutRow) & ~1))
        if !packed {
            // The expanded rows must fit the row buffer; at worst two output rows a stripe.
            while k > 2 && Self.sourceRows(outputRows: 0, k, srcH: f.height, dstH: d.height).count + 1 > rowBuffer.count / srcStride {
                k -= 2
            }
            if Self.sourceRows(outputRows: 0, k, srcH: f.height, dstH: d.height).count + 1 > rowBuffer.count / srcStride {
                scalePlanarWhole(f, into: d)    // an extreme downscale of a very wide frame
                return
            }
        }
        let stripe = outStripe.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var y0 = 0
        while y0 < d.height {
            let n = min(k, d.height - y0)
            let rows = Self.sourceRows(outputRows: y0, y0 + n, srcH: f.height, dstH: d.height)
            // The scaler addresses the source from its top-left corner; for planar input the base
            // is only offset so that the rows it reads (`rows`) land in the row buffer.
            let srcBase: UnsafePointer<UInt8>
            if packed {
                srcBase = f.plane(0)!.assumingMemoryBound(to: UInt8.self)
            } else {
                let first = rows.lowerBound & ~1
                expandPlanarRows(f, first: first, count: rows.upperBound - first)
                srcBase = UnsafePointer(bitPattern: Int(bitPattern: rowBuffer.baseAddress!) - first * srcStride)!
            }
            scaler.scale(src: srcBase, srcStride: srcStride, srcW: f.width, srcH: f.height,
                         dst: stripe, dstStride: outStripeStride, dstW: d.width, dstH: d.height, y0: y0, count: n)
            let dy = d.y + y0 * d.strideY, du = d.u + (y0 / 2) * d.strideUV, dv = d.v + (y0 / 2) * d.strideUV
            let sY = Int32(d.strideY), sUV = Int32(d.strideUV)
            if f.format == .rgba || f.format == .rgbx {
                ABGRToI420(stripe, Int32(outStripeStride), dy, sY, du, sUV, dv, sUV, Int32(d.width), Int32(n))
            } else {
                ARGBToI420(stripe, Int32(outStripeStride), dy, sY, du, sUV, dv, sUV, Int32(d.width), Int32(n))
            }
            y0 += n
            // Rows above what the next stripe reads are done.
            if y0 < d.height {
                release.release(belowRow: Self.sourceRows(outputRows: y0, y0 + 1, srcH: f.height, dstH: d.height).lowerBound & ~1)
            }
        }
    }

    /// Planar source rows `first..<first+count` (first even) as B,G,R,A at the start of the row buffer.
    private func expandPlanarRows(_ f: VideoFrame, first: Int, count: Int) {
        let y = f.plane(0)!.assumingMemoryBound(to: UInt8.self) + first * f.stride(0)
        let out = rowBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let outStride = Int32(f.width * 4)
        if f.format == .nv12 {
            let uv = f.plane(1)!.assumingMemoryBound(to: UInt8.self) + (first / 2) * f.stride(1)
            NV12ToARGB(y, Int32(f.stride(0)), uv, Int32(f.stride(1)), out, outStride, Int32(f.width), Int32(count))
        } else {
            let u = f.plane(1)!.assumingMemoryBound(to: UInt8.self) + (first / 2) * f.stride(1)
            let v = f.plane(2)!.assumingMemoryBound(to: UInt8.self) + (first / 2) * f.stride(2)
            I420ToARGB(y, Int32(f.stride(0)), u, Int32(f.stride(1)), v, Int32(f.stride(2)),
                       out, outStride, Int32(f.width), Int32(count))
        }
    }

    /// Fallback for planar input so wide and so strongly downscaled that two output rows need
    /// more source rows than the row buffer holds (wider than about 5000 px and shrunk more than
    /// 4.5x): plane-wise scaling of the whole frame, no stripes (the pages are still released
    /// afterwards). NV12 keeps its luma and gets neutral chroma here: libyuv has no NV12-to-I420
    /// scaler, and a full-size chroma scratch is what this converter avoids.
    private func scalePlanarWhole(_ f: VideoFrame, into d: I420Frame) {
        let y = f.plane(0)!.assumingMemoryBound(to: UInt8.self)
        let sY = Int32(d.strideY), sUV = Int32(d.strideUV)
        if f.format == .nv12 {
            ScalePlane(y, Int32(f.stride(0)), Int32(f.width), Int32(f.height),
                       d.y, sY, Int32(d.width), Int32(d.height), kFilterBilinear)
            let cw = (d.width + 1) / 2
            for r in 0..<(d.height + 1) / 2 {
                (d.u + r * d.strideUV).update(repeating: 128, count: cw)
                (d.v + r * d.strideUV).update(repeating: 128, count: cw)
            }
        } else {
            I420Scale(y, Int32(f.stride(0)), f.plane(1)!.assumingMemoryBound(to: UInt8.self), Int32(f.stride(1)),
                      f.plane(2)!.assumingMemoryBound(to: UInt8.self), Int32(f.stride(2)), Int32(f.width), Int32(f.height),
                      d.y, sY, d.u, sUV, d.v, sUV, Int32(d.width), Int32(d.height), kFilterBilinear)
        }
    }
}

/// Drops the pages of source rows the converter has finished with (only for frames marked
/// `sourcePagesReleasable`): from the last released point down to a row, page-aligned, per plane.
struct SourceRelease {
    private let frame: VideoFrame
    private let enabled: Bool
    private var released = (0, 0, 0)
    private static let pageMask = Int(sysconf(Int32(_SC_PAGESIZE))) - 1

    init(_ frame: VideoFrame) {
        self.frame = frame
        enabled = frame.sourcePagesReleasable
    }

    /// Luma rows `0..<row` (and the chroma rows that go with them) are no longer needed.
    mutating func release(belowRow row: Int) {
        guard enabled else { return }
        for p in 0..<frame.format.planeCount {
            let rows = p == 0 ? row : row / 2
            drop(plane: p, upTo: min(rows * frame.stride(p), frame.planeSize(p)), roundUp: false)
        }
    }

    /// After the last stripe: every row of every plane, up to the page holding the last byte.
    mutating func finish() {
        guard enabled else { return }
        for p in 0..<frame.format.planeCount {
            let rows = frame.format.planeRows(plane: p, height: frame.height)
            drop(plane: p, upTo: min(rows * frame.stride(p), frame.planeSize(p)), roundUp: true)
        }
    }

    private mutating func drop(plane p: Int, upTo end: Int, roundUp: Bool) {
        let from = p == 0 ? released.0 : (p == 1 ? released.1 : released.2)
        guard end > from, let base = frame.plane(p) else { return }
        let start = (Int(bitPattern: base) + from) & ~Self.pageMask
        var stop = Int(bitPattern: base) + end
        stop = roundUp ? (stop + Self.pageMask) & ~Self.pageMask : stop & ~Self.pageMask
        if stop > start { _ = madvise(UnsafeMutableRawPointer(bitPattern: start), stop - start, MADV_DONTNEED) }
        switch p {
        case 0: released.0 = end
        case 1: released.1 = end
        default: released.2 = end
        }
    }
}
