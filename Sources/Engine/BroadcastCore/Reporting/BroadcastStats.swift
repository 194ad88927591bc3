import Synchronization

/// A point-in-time copy of the session's counters.
public struct StatsSnapshot: Sendable {
    public var monotonicNs: Int64 = 0
    /// Captured pictures accepted by the video lane.
    public var videoFramesIn = 0
    /// Pictures encoded again because the source sent nothing new within a frame (a still screen).
    public var videoFramesRepeated = 0
    /// Captured pictures skipped before conversion because the source runs faster than the output
    /// frame rate (a 60 Hz desktop under `--fps 30`): not drops, and not in `videoFramesIn`.
    public var videoFramesSkipped = 0
    public var videoFramesEncoded = 0
    public var videoFramesSent = 0
    public var audioFramesSent = 0
    public var videoBytesSent = 0
    public var audioBytesSent = 0
    public var bytesSent = 0
    /// Drops per reason, in storage inline in the snapshot: counting a drop never allocates.
    public var drops = DropCounts()
    public var queueBytes = 0
    public var queueMs = 0
    public var targetVideoKbps = 0
    /// Bitrate probes that failed (the link did not carry them), and the last one's level and how
    /// long its target stood, ms (the tick or queue reading that set it to the one that ended it).
    public var probesFailed = 0
    public var lastFailedProbeKbps = 0
    public var lastFailedProbeMs = 0
    public var reconnects = 0
    public var lateTagsClamped = 0
    /// Video frames whose capture PTS the timestamp smoother moved by 1 ms or more.
    public var videoPtsCorrections = 0
    /// NaN or infinite float audio samples the lanes replaced with 0 (silence).
    public var audioNonFiniteSamples = 0

    public init() {}

    public func drops(_ r: DropReason) -> Int { drops[r] }
    public var totalDrops: Int { drops.total }
}

/// One counter per `DropReason`, stored inline (no array): a snapshot is copied every second while
/// the lanes keep counting, and an array would be copied on the next count (a heap allocation on
/// the capture thread exactly when the machine is short).
public struct DropCounts: Sendable, Equatable {
    /// Room for more reasons than there are; `DropReason.index` stays below it.
    static let slots = 16
    private var counts = InlineArray<16, Int>(repeating: 0)

    public init() {}

    public subscript(_ r: DropReason) -> Int {
        get { counts[r.index] }
        set { counts[r.index] = newValue }
    }

    public var total: Int {
        var t = 0
        for i in 0..<Self.slots { t += counts[i] }
        return t
    }

    public static func == (a: DropCounts, b: DropCounts) -> Bool {
        for i in 0..<slots where a.counts[i] != b.counts[i] { return false }
        return true
    }
}

extension DropReason {
    var index: Int {
        switch self {
        case .encoderBusy: return 0
        case .audioLaneFull: return 1
        case .malformed: return 2
        case .backwardsTimestamp: return 3
        case .wrongLane: return 4
        case .congestionPFrame: return 5
        case .congestionUntilIDR: return 6
        case .queueFull: return 7
        case .encoderError: return 8
        }
    }
}

/// Thread-safe counters shared by lanes, muxer and senders.
public final class BroadcastStats: Sendable {
    private let state = Locked(StatsSnapshot())
    private let repeatedFrames = Atomic<Int>(0)
    private let skippedFrames = Atomic<Int>(0)

    public init() {}

    public func countDrop(_ reason: DropReason, _ n: Int = 1) {
        state.withLock { $0.drops[reason] += n }
    }

    /// One repeated picture (the video lane's thread).
    package func countRepeatedFrame() {
        repeatedFrames.add(1, ordering: .relaxed)
    }

    /// One picture skipped by the video lane's frame-rate gate (the capture thread).
    package func countSkippedFrame() {
        skippedFrames.add(1, ordering: .relaxed)
    }

    package func update(_ body: (inout StatsSnapshot) -> Void) {
        state.withLock { body(&$0) }
    }

    public func snapshot() -> StatsSnapshot {
        var s = state.withLock { $0 }
        s.videoFramesRepeated = repeatedFrames.load(ordering: .relaxed)
        s.videoFramesSkipped = skippedFrames.load(ordering: .relaxed)
        s.monotonicNs = MediaTime.now()
        return s
    }
}
