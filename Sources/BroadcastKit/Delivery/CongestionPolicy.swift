/// Send-queue thresholds, after OBS's rtmp-stream drop policy.
public struct CongestionPolicy: Sendable, Equatable {
    /// Past this much queued media, non-keyframe video is dropped until the next keyframe.
    public var dropPFramesAfterMs: Int
    /// Past this much, all video is dropped until an IDR is admitted below the threshold.
    public var dropAllVideoAfterMs: Int
    /// Hard byte cap of the queue; the only point at which audio is dropped.
    public var maxBytes: Int

    public init(dropPFramesAfterMs: Int = 700, dropAllVideoAfterMs: Int = 900, maxBytes: Int = 2 << 20) {
        self.dropPFramesAfterMs = dropPFramesAfterMs
        self.dropAllVideoAfterMs = dropAllVideoAfterMs
        self.maxBytes = maxBytes
    }

    public static let `default` = CongestionPolicy()
}
