/// Which picture the test source paints.
public enum TestPatternKind: String, Sendable, CaseIterable {
    /// Scrolling colour bars and ramp plus a band of per-frame noise over a moving gradient,
    /// so x264 has to spend its target bitrate (a realistic encoder load).
    case moving
    /// Scrolling colour bars and ramp only: nearly free to encode (the historical pattern).
    case `static`
}
