/// The ranges every front end accepts (CLI, C ABI, GStreamer, Python), owned here so that
/// they map values and never restate a rule. `BroadcastConfiguration.validate()` checks them.
public enum BroadcastLimits {
    /// Output width and height in pixels (even; input of any size is scaled and boxed).
    public static let videoDimension: ClosedRange<Int> = 16...8192
    /// Output frame rate.
    public static let fps: ClosedRange<Int> = 1...120
    /// x264 target bitrate (also the VBV maximum), kbps.
    public static let videoBitrateKbps: ClosedRange<Int> = 100...50_000
    /// Seconds between keyframes.
    public static let keyframeIntervalSeconds: ClosedRange<Int> = 1...20
    /// AAC-LC bitrate, kbps (vo-aacenc's useful range for 48 kHz stereo).
    public static let aacBitrateKbps: ClosedRange<Int> = 32...320
    /// Opus bitrate, kbps (libopus's range for stereo).
    public static let opusBitrateKbps: ClosedRange<Int> = 16...510
    /// Replay ring length in seconds (0 turns it off).
    public static let replaySeconds: ClosedRange<Int> = 0...3600
}
