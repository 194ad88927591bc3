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
    package var repeatsLastPicture: Bool {
        if case .drop = self { return true }
        return false
    }

    /// `.block` with the default timeout.
    public static let block = Backpressure.block(timeoutNs: defaultBlockTimeoutNs)

    /// The absolute CLOCK_MONOTONIC deadline of a wait starting now, or nil for `.drop`.
    package var deadlineNs: Int64? {
        guard case .block(let t) = self else { return nil }
        return MediaTime.now() + max(0, t)
    }
}
