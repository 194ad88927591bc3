/// One buffer handed to `BroadcastSession.process(_:type:)`, the analogue of a `CMSampleBuffer`.
public enum SampleBuffer: @unchecked Sendable {
    case video(VideoFrame)
    case audio(AudioBuffer)
}

/// What happened to a buffer handed to the session. Drops are also counted in `BroadcastStats`.
public enum ProcessResult: Sendable, Equatable {
    /// Converted (video) or copied into the lane (audio) and queued for encoding.
    case accepted
    /// Dropped, with the reason it was counted under.
    case dropped(DropReason)
    /// The session is not running (not started, finishing or finished).
    case notRunning
}

/// Why a buffer, frame or tag was dropped. Every drop is counted under exactly one reason.
public enum DropReason: String, Sendable, CaseIterable {
    /// The video lane already had 2 frames pending; the newest was dropped.
    case encoderBusy = "encoder_busy"
    /// An audio lane's bounded queue was full.
    case audioLaneFull = "audio_lane_full"
    /// Bad size, stride, pixel/sample format or short buffer.
    case malformed
    /// The buffer's PTS was not after the previous one on its lane.
    case backwardsTimestamp = "backwards_timestamp"
    /// Wrong buffer kind for the lane (audio on .video or the reverse).
    case wrongLane = "wrong_lane"
    /// Send queue past the soft duration threshold: non-keyframe video dropped.
    case congestionPFrame = "congestion_p_frame"
    /// Send queue past the hard duration threshold: all video dropped until the next IDR.
    case congestionUntilIDR = "congestion_until_idr"
    /// Send queue byte cap reached (the only case where audio is dropped).
    case queueFull = "queue_full"
    /// Encoder reported an error for this input.
    case encoderError = "encoder_error"
}

/// Anything that accepts sample buffers: a `BroadcastSession`, or a test double in source tests.
public protocol SampleBufferSink: AnyObject, Sendable {
    @discardableResult
    func process(_ buffer: SampleBuffer, type: SampleBufferType) -> ProcessResult
    /// The producer of `type` ended by itself (the end of a file, a source's duration): no more
    /// buffers come on that lane. A session stops repeating the last picture at once, so the
    /// stream is never padded between the last picture and the finish.
    func endOfInput(_ type: SampleBufferType)
}

extension SampleBufferSink {
    /// Sinks with nothing to stop take the end of input as a no-op.
    public func endOfInput(_ type: SampleBufferType) {}
}
