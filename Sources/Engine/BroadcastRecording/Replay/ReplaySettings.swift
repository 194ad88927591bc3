import BroadcastCore
import BroadcastPipeline

/// The rolling replay buffer: how much to keep, and where saved clips go by default.
public struct ReplaySettings: Sendable, Equatable {
    /// Seconds of encoded video and audio kept (0: no replay buffer). The ring is planned from
    /// the VBV maximum bitrate, counted in the memory plan, and allocated at `prepare()`.
    public var seconds: Int
    /// Directory for clips saved without a path (`replay-YYYYMMDD-HHMMSS.mp4`, UTC).
    public var directory: String

    public init(seconds: Int = 0, directory: String = ".") {
        self.seconds = seconds
        self.directory = directory
    }

    public static let `default` = ReplaySettings()
}

/// A clip saved from the replay buffer.
public struct ReplayClip: Sendable, Equatable {
    /// Where the MP4 was written.
    public var path: String
    /// From its first keyframe to the end of its last frame.
    public var durationSeconds: Double
    /// File size.
    public var bytes: Int

    package init(path: String, durationSeconds: Double, bytes: Int) {
        self.path = path
        self.durationSeconds = durationSeconds
        self.bytes = bytes
    }
}
