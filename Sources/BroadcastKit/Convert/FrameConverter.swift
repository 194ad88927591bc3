import CYUV

/// Converts any accepted input (BGRA/BGRx/RGBA/RGBx/NV12/I420, any size and stride) into an
/// output-sized I420 picture with libyuv, letterboxing or pillarboxing to keep the aspect ratio.
///
/// Same-size input is converted straight into the destination (one pass). Other sizes go
/// through one scratch I420 picture at the source size, which is only reallocated when the
/// source size changes (a resized window), never per frame.
public final class FrameConverter: @unchecked Sendable {
    public let outputWidth: Int
    public let outputHeight: Int
    private var scratch: UnsafeMutableRawBufferPointer?
    private var scratchW = 0
    private var scratchH = 0
    /// Scratch bytes currently held, for the memory plan.
    public private(set) var scratchBytes = 0

    public init(outputWidth: Int, outputHeight: Int) {
        self.outputWidth = outputWidth
        self.outputHeight = outputHeight
    }

    deinit { scratch?.deallocate() }

    /// Fills the whole destination with black (Y 16, U/V 128): borders of a letterboxed picture.
    public static func fillBlack(_ dst: I420Frame) {
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
    public func convert(_ frame: VideoFrame, into dst: I420Frame) -> LetterboxGeometry {
        let geo = LetterboxGeometry.fit(srcW: frame.width, srcH: frame.height, dstW: dst.width, dstH: dst.height)
        if geo.width == frame.width && geo.height == frame.height {
            convertSameSize(frame, into: offset(dst, geo))
            return geo
        }
        if frame.format == .i420 {
            scaleI420(src: frame.plane(0)!.assumingMemoryBound(to: UInt8.self), srcStrideY: frame.stride(0),
                      u: frame.plane(1)!.assumingMemoryBound(to: UInt8.self), srcStrideU: frame.stride(1),
                      v: frame.plane(2)!.assumingMemoryBound(to: UInt8.self), srcStrideV: frame.stride(2),
                      srcW: frame.width, srcH: frame.height, into: offset(dst, geo))
            return geo
        }
        let tmp = scratchFrame(width: frame.width, height: frame.height)
        convertSameSize(frame, into: tmp)
        scaleI420(src: tmp.y, srcStrideY: tmp.strideY, u: tmp.u, srcStrideU: tmp.strideUV,
                  v: tmp.v, srcStrideV: tmp.strideUV, srcW: tmp.width, srcH: tmp.height, into: offset(dst, geo))
        return geo
    }

    private func offset(_ dst: I420Frame, _ geo: LetterboxGeometry) -> I420Frame {
        I420Frame(width: geo.width, height: geo.height,
                  y: dst.y + geo.y * dst.strideY + geo.x,
                  u: dst.u + (geo.y / 2) * dst.strideUV + geo.x / 2,
                  v: dst.v + (geo.y / 2) * dst.strideUV + geo.x / 2,
                  strideY: dst.strideY, strideUV: dst.strideUV)
    }

    private func scratchFrame(width: Int, height: Int) -> I420Frame {
        if scratch == nil || width != scratchW || height != scratchH {
            scratch?.deallocate()
            let bytes = I420Frame.byteCount(width: width, height: height)
            scratch = .allocate(byteCount: bytes, alignment: 64)
            scratchW = width
            scratchH = height
            scratchBytes = bytes
        }
        let base = scratch!.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        return I420Frame(width: width, height: height, y: base, u: base + width * height,
                         v: base + width * height + cw * ch, strideY: width, strideUV: cw)
    }

    private func scaleI420(src: UnsafePointer<UInt8>, srcStrideY: Int, u: UnsafePointer<UInt8>, srcStrideU: Int,
                           v: UnsafePointer<UInt8>, srcStrideV: Int, srcW: Int, srcH: Int, into d: I420Frame) {
        I420Scale(src, Int32(srcStrideY), u, Int32(srcStrideU), v, Int32(srcStrideV), Int32(srcW), Int32(srcH),
                  d.y, Int32(d.strideY), d.u, Int32(d.strideUV), d.v, Int32(d.strideUV),
                  Int32(d.width), Int32(d.height), kFilterBilinear)
    }

    private func convertSameSize(_ f: VideoFrame, into d: I420Frame) {
        let w = Int32(f.width), h = Int32(f.height)
        let p0 = f.plane(0)!.assumingMemoryBound(to: UInt8.self)
        switch f.format {
        case .bgra, .bgrx:
            // libyuv's "ARGB" is B,G,R,A in memory.
            ARGBToI420(p0, Int32(f.stride(0)), d.y, Int32(d.strideY), d.u, Int32(d.strideUV), d.v, Int32(d.strideUV), w, h)
        case .rgba, .rgbx:
            ABGRToI420(p0, Int32(f.stride(0)), d.y, Int32(d.strideY), d.u, Int32(d.strideUV), d.v, Int32(d.strideUV), w, h)
        case .nv12:
            NV12ToI420(p0, Int32(f.stride(0)), f.plane(1)!.assumingMemoryBound(to: UInt8.self), Int32(f.stride(1)),
                       d.y, Int32(d.strideY), d.u, Int32(d.strideUV), d.v, Int32(d.strideUV), w, h)
        case .i420:
            I420Copy(p0, Int32(f.stride(0)), f.plane(1)!.assumingMemoryBound(to: UInt8.self), Int32(f.stride(1)),
                     f.plane(2)!.assumingMemoryBound(to: UInt8.self), Int32(f.stride(2)),
                     d.y, Int32(d.strideY), d.u, Int32(d.strideUV), d.v, Int32(d.strideUV), w, h)
        }
    }
}
