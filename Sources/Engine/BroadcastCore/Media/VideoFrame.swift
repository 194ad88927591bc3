/// A borrowed view of one captured video frame.
///
/// The memory belongs to the caller and only has to stay valid for the duration of
/// `BroadcastSession.process(_:type:)`: the session converts it straight into a pooled
/// encoder-input frame and never keeps a reference.
public struct VideoFrame: @unchecked Sendable {
    public var width: Int
    public var height: Int
    public var format: PixelFormat
    /// Base address of each plane; only the first `format.planeCount` entries are read.
    public var planes: (UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?)
    /// Bytes per row of each plane.
    public var strides: (Int, Int, Int)
    /// Readable bytes behind each plane, so that a short buffer is rejected instead of over-read.
    public var planeSizes: (Int, Int, Int)
    /// Capture time in nanoseconds on the source clock (CLOCK_MONOTONIC for live sources).
    public var pts: Int64
    /// The planes live in a shared file mapping (a PipeWire memfd) whose pages the converter may
    /// drop from this process with `madvise(MADV_DONTNEED)` as soon as it has read them, so a
    /// frame keeps only a few stripes resident instead of its whole size. The producer's data
    /// stays intact (a shared mapping only loses our page-table entries). Never set this for
    /// private or anonymous memory: DONTNEED would zero it.
    public var sourcePagesReleasable = false

    public init(width: Int, height: Int, format: PixelFormat,
                planes: (UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?),
                strides: (Int, Int, Int), planeSizes: (Int, Int, Int), pts: Int64) {
        self.width = width
        self.height = height
        self.format = format
        self.planes = planes
        self.strides = strides
        self.planeSizes = planeSizes
        self.pts = pts
    }

    /// A single-plane packed frame (BGRA, BGRx, RGBA, RGBx).
    public init(packed format: PixelFormat, width: Int, height: Int, stride: Int,
                bytes: UnsafeRawBufferPointer, pts: Int64) {
        self.init(width: width, height: height, format: format,
                  planes: (bytes.baseAddress, nil, nil), strides: (stride, 0, 0),
                  planeSizes: (bytes.count, 0, 0), pts: pts)
    }

    @inline(__always) package func plane(_ i: Int) -> UnsafeRawPointer? {
        i == 0 ? planes.0 : (i == 1 ? planes.1 : planes.2)
    }
    @inline(__always) package func stride(_ i: Int) -> Int {
        i == 0 ? strides.0 : (i == 1 ? strides.1 : strides.2)
    }
    @inline(__always) package func planeSize(_ i: Int) -> Int {
        i == 0 ? planeSizes.0 : (i == 1 ? planeSizes.1 : planeSizes.2)
    }

    /// Checks sizes, strides and plane extents; returns why the frame is unusable, or nil.
    public func validate() -> String? {
        guard width > 0, height > 0, width <= 8192, height <= 8192 else {
            return "frame size \(width)x\(height) outside 1..8192"
        }
        for p in 0..<format.planeCount {
            guard plane(p) != nil else { return "plane \(p) missing for \(format.rawValue)" }
            let minStride = format.minimumStride(plane: p, width: width)
            guard stride(p) >= minStride else {
                return "stride \(stride(p)) of plane \(p) below minimum \(minStride) for \(format.rawValue) \(width)px"
            }
            // libyuv takes 32-bit strides.
            guard stride(p) <= Int(Int32.max) else { return "stride \(stride(p)) of plane \(p) too large" }
            let rows = format.planeRows(plane: p, height: height)
            let (span, o1) = stride(p).multipliedReportingOverflow(by: rows - 1)
            let (needed, o2) = span.addingReportingOverflow(minStride)
            guard !o1, !o2, planeSize(p) >= needed else {
                return "plane \(p) holds \(planeSize(p)) bytes, \(needed) needed"
            }
        }
        return nil
    }
}
