import BroadcastCore

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

    /// The same byte cap without the media-time thresholds: for destinations that are not network
    /// links (recordings, custom sinks), which drop only when the cap is reached.
    public var byteCapOnly: CongestionPolicy {
        CongestionPolicy(dropPFramesAfterMs: Int.max, dropAllVideoAfterMs: Int.max, maxBytes: maxBytes)
    }

    /// `maxBytes` value that asks the session to size the cap from the configured bitrates.
    public static let sizedByBitrate = 0

    /// OBS's thresholds with the byte cap sized by the session (`BroadcastConfiguration`'s default).
    public static let bitrateSized = CongestionPolicy(maxBytes: sizedByBitrate)

    /// About 4 s of media at these rates, at least 512 KB: the drop policy acts at 0.7-0.9 s, so the
    /// cap only bounds a burst (the send queue's plan line, the same for every front end).
    public static func sendQueueBytes(videoKbps: Int, audioKbps: Int) -> Int {
        max(512 << 10, (videoKbps + audioKbps) * 1000 / 8 * 4)
    }
}
