import BroadcastCore

/// The x264 presets a session accepts, lightest first. `VideoEncoderSettings.preset` holds the raw
/// value; every front end offers exactly these (the memory plan is calibrated for them).
public enum X264Preset: String, CaseIterable, Sendable {
    case ultrafast, superfast, veryfast, faster, fast, medium

    /// The names, comma-separated, for messages and help texts.
    public static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }
}
