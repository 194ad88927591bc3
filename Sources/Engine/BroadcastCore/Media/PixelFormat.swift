/// Pixel layouts accepted on the video lane.
///
/// Names follow the byte order in memory, as PipeWire/SPA and GStreamer spell them
/// (BGRA means byte 0 is blue). libyuv names the same layouts by little-endian words,
/// so `.bgra` is libyuv's "ARGB".
public enum PixelFormat: String, Sendable, CaseIterable {
    case bgra, bgrx, rgba, rgbx, nv12, i420

    /// Number of planes a buffer of this format carries.
    public var planeCount: Int {
        switch self {
        case .bgra, .bgrx, .rgba, .rgbx: return 1
        case .nv12: return 2
        case .i420: return 3
        }
    }

    /// Smallest legal stride, in bytes, of `plane` for a frame `width` pixels wide.
    public func minimumStride(plane: Int, width: Int) -> Int {
        switch self {
        case .bgra, .bgrx, .rgba, .rgbx: return width * 4
        case .nv12: return plane == 0 ? width : (width + 1) / 2 * 2
        case .i420: return plane == 0 ? width : (width + 1) / 2
        }
    }

    /// Rows in `plane` for a frame `height` pixels high.
    public func planeRows(plane: Int, height: Int) -> Int {
        switch self {
        case .bgra, .bgrx, .rgba, .rgbx: return height
        case .nv12, .i420: return plane == 0 ? height : (height + 1) / 2
        }
    }
}
