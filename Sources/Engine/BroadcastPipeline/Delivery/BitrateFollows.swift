import BroadcastCore

/// Which destination the one encode's bitrate adapts to when there are several.
public enum BitrateFollows: String, Sendable, CaseIterable {
    /// The primary (the first network publisher): a slow secondary drops frames in its own queue
    /// but never lowers the quality the others get. The default.
    case primary
    /// The slowest live network publisher: every destination gets a stream it can carry, at the
    /// cost of the faster ones getting less.
    case slowest
}
