import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording

/// One session's stages, wired in data-flow order by `PipelineAssembler`:
///
///     lanes ─► (mixer) ─► encoders ─► tag writers ─► interleaver ─► destinations
///
/// It owns every pool and queue for the life of the session; nothing here is created per frame.
final class Pipeline: @unchecked Sendable {
    let videoEncoder: VideoEncoder?
    let audioEncoder: AudioEncoder?
    let videoLane: VideoLane?
    /// `.appAudio` then `.micAudio`, or empty without audio.
    let audioLanes: [AudioLane]
    let mixer: AudioMixer?
    let interleaver: Interleaver
    let destinations: DestinationSet
    let plan: MemoryPlan
    /// Set when the memory budget forced lighter encoder settings: what was chosen, and why.
    let downgradeNote: String?
    /// The replay buffer and its clip writer, with `replay.seconds` > 0.
    var replay: ReplaySaver?

    init(videoEncoder: VideoEncoder?, audioEncoder: AudioEncoder?, videoLane: VideoLane?, audioLanes: [AudioLane],
                 mixer: AudioMixer?, interleaver: Interleaver, destinations: DestinationSet, plan: MemoryPlan,
                 downgradeNote: String?) {
        self.videoEncoder = videoEncoder
        self.audioEncoder = audioEncoder
        self.videoLane = videoLane
        self.audioLanes = audioLanes
        self.mixer = mixer
        self.interleaver = interleaver
        self.destinations = destinations
        self.plan = plan
        self.downgradeNote = downgradeNote
    }

    /// The lane for an audio buffer type.
    func audioLane(_ type: SampleBufferType) -> AudioLane? {
        audioLanes.first { $0.lane == type }
    }

    /// Starts the lane threads (destinations are opened by the session first). When one cannot
    /// start, the caller drains the ones that did (`drainLanes` joins only started threads).
    func startLanes() throws(WorkerThread.StartFailure) {
        try videoLane?.start()
        for lane in audioLanes { try lane.start() }
        try replay?.start()
    }

    /// Encodes what the lanes hold, flushes the mixer and the encoders, and releases every
    /// staged tag to the destinations. Destinations are finished by the session afterwards.
    func drainLanes() {
        for lane in audioLanes { lane.finish() }
        mixer?.flush()
        videoLane?.finish()
        interleaver.drain(nowNs: MediaTime.now())
        replay?.stop()
    }
}
