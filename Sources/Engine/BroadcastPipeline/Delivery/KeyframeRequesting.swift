import BroadcastCore

/// A destination whose receiver can ask for a keyframe (WebRTC's PLI and FIR: a decoder that lost
/// a reference needs an IDR to recover). When the pipeline is assembled with video, the session
/// hands it the video lane's request; the destination calls it from its own thread, and the next
/// frame the lane encodes is an IDR. `Destination` needs nothing else from it, so the session names
/// no destination type to wire it (WHIP's publisher conforms; so may an embedder's sink).
public protocol KeyframeRequesting: AnyObject {
    /// Asks the video lane for an IDR at its next frame. Set once, before the destination opens;
    /// nil in a session without video.
    var keyframeRequester: (@Sendable () -> Void)? { get set }
}
