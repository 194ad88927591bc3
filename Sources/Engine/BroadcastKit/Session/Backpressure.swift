import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording

/// What `BroadcastSession.process` does when a lane has no room (the video lane's pending
/// frames, an audio lane's ring).
public enum Backpressure: Sendable, Hashable {
    /// Return at once with a counted drop (`encoder_busy`, `audio_lane_full`): for live sources,
    /// whose late frame is worth less than the next one.
    case drop
    /// Wait for room up to `timeoutNs`, then drop and count as `.drop` does: for producers
    /// faster than real time (a transcoder, a file), which want every buffer encoded.
    case block(timeoutNs: Int64)

    /// How long a blocked `process` call waits before it drops: long enough for the slowest
    /// encoder configuration to take a frame on a loaded machine, short enough to surface a
    /// stalled session.
    public static let defaultBlockTimeoutNs: Int64 = 5_000_000_000

    /// A live producer (`drop`) keeps the output frame rate constant: a still screen's last
    /// picture is repeated. A producer faster than real time (`block`) is the stream's clock
    /// itself: repeating against the wall clock would insert pictures it never made.
    var repeatsLastPicture: Bool {
        if case .drop = self { return true }
        return false
    }

    /// The producer is the stream's clock (`block`): no stage after the lanes moves on by the wall
    /// clock. The audio mixer mixes no silence through a pause and never treats a quiet source as
    /// gone, the interleaver releases a lone track only when the other one has really stopped (not
    /// after a wall-clock wait), and every send queue waits for its sink instead of dropping: a
    /// pause of the producer is a pause, and a slow sink slows the producer, as `GstBaseSink` does.
    var producerIsClock: Bool { !repeatsLastPicture }

    /// How long a stage after the lanes (a send queue, the interleaver's staging) waits for room in
    /// `block` mode before it counts a drop; nil for `drop`. Half the producer's own timeout: the
    /// stage gives up first, so a sink that stalls for good costs that sink a counted drop, never a
    /// frame the producer's wait for the lane would drop for every destination (the recording too).
    var stageWaitNs: Int64? {
        guard case .block(let t) = self else { return nil }
        return max(0, t) / 2
    }

    /// `.block` with the default timeout.
    public static let block = Backpressure.block(timeoutNs: defaultBlockTimeoutNs)

    /// The absolute CLOCK_MONOTONIC deadline of a wait starting now, or nil for `.drop`.
    var deadlineNs: Int64? {
        guard case .block(let t) = self else { return nil }
        return MediaTime.now() + max(0, t)
    }
}
