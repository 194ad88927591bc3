import BroadcastCore

/// The ranges and defaults every front end accepts (CLI, C ABI, GStreamer, Python), owned here so
/// that front ends map values and never restate a rule: the C ABI exposes this table as
/// `bk_limits()`, which the Python binding and the GStreamer element read.
/// `BroadcastConfiguration.validate()` checks a configuration against it.
public enum BroadcastLimits {
    /// Output width in pixels (even; input of any size is scaled and boxed).
    public static let width: ClosedRange<Int> = 16...3840
    /// Output height in pixels (even).
    public static let height: ClosedRange<Int> = 16...2160
    /// Output frame rate.
    public static let fps: ClosedRange<Int> = 1...120
    /// x264 target bitrate (also the VBV maximum), kbps.
    public static let videoBitrateKbps: ClosedRange<Int> = 100...50_000
    /// Seconds between keyframes.
    public static let keyframeIntervalSeconds: ClosedRange<Int> = 1...20
    /// AAC-LC bitrate, kbps (vo-aacenc at 48 kHz stereo).
    public static let aacBitrateKbps: ClosedRange<Int> = 16...320
    /// Opus bitrate, kbps (RFC 6716: up to 510 kbit/s).
    public static let opusBitrateKbps: ClosedRange<Int> = 16...510
    /// Replay ring length in seconds (0 turns it off).
    public static let replaySeconds: ClosedRange<Int> = 0...3600
    /// Reconnect attempts after a lost connection (`ReconnectPolicy.maxAttempts`): 0 retries
    /// forever, -1 never reconnects (the first loss fails the destination).
    public static let reconnectAttempts: ClosedRange<Int> = -1...1_000_000
    /// The first reconnect delay in seconds (`ReconnectPolicy.initialDelaySeconds`); every delay
    /// is at least 0.1 s (`ReconnectPolicy.delay`), so a smaller one would not mean what it says.
    public static let reconnectDelaySeconds: ClosedRange<Double> = 0.1...300

    /// The audio bitrate range of `codec`.
    public static func audioBitrateKbps(_ codec: AudioCodec) -> ClosedRange<Int> {
        codec == .aac ? aacBitrateKbps : opusBitrateKbps
    }

    /// The default audio bitrate of `codec`: 128 kbps AAC, 96 kbps Opus (transparent for stereo).
    public static func defaultAudioBitrateKbps(_ codec: AudioCodec) -> Int { codec == .aac ? 128 : 96 }

    /// The default video bitrate for an output size and rate: 800 kbps up to 640x360, 1200 up to
    /// 854x480, 2500 up to 1280x720, else 4500; half as much again above 30 fps. Every front end
    /// that is given no bitrate uses it (the C ABI and GStreamer as 0, Python as None).
    public static func defaultVideoBitrateKbps(width: Int, height: Int, fps: Int) -> Int {
        let base: Int
        switch width * height {
        case ..<(640 * 360 + 1): base = 800
        case ..<(854 * 480 + 1): base = 1200
        case ..<(1280 * 720 + 1): base = 2500
        default: base = 4500
        }
        return fps > 30 ? base * 3 / 2 : base
    }

    /// The default x264 preset.
    public static let defaultPreset = X264Preset.veryfast

    /// "lo...hi", as messages show a range (Swift's notation, as the CLI's usage errors do).
    public static func text(_ r: ClosedRange<Int>) -> String { "\(r.lowerBound)...\(r.upperBound)" }

    /// "lo...hi" for a range of seconds ("0.1...300"), whole numbers without a fraction.
    public static func text(_ r: ClosedRange<Double>) -> String { "\(number(r.lowerBound))...\(number(r.upperBound))" }

    /// `v` as messages show it: "300", "0.1", "2.5".
    static func number(_ v: Double) -> String {
        v.isFinite && v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : "\(v)"
    }
}
