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
package final class Pipeline: @unchecked Sendable {
    package let videoEncoder: VideoEncoder?
    package let audioEncoder: AudioEncoder?
    package let videoLane: VideoLane?
    /// `.appAudio` then `.micAudio`, or empty without audio.
    package let audioLanes: [AudioLane]
    package let mixer: AudioMixer?
    package let interleaver: Interleaver
    package let destinations: DestinationSet
    package let plan: MemoryPlan
    /// Set when the memory budget forced lighter encoder settings: what was chosen, and why.
    package let downgradeNote: String?
    /// The replay buffer and its clip writer, with `replay.seconds` > 0.
    package var replay: ReplaySaver?

    package init(videoEncoder: VideoEncoder?, audioEncoder: AudioEncoder?, videoLane: VideoLane?, audioLanes: [AudioLane],
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
    package func audioLane(_ type: SampleBufferType) -> AudioLane? {
        audioLanes.first { $0.lane == type }
    }

    /// Starts the lane threads (destinations are opened by the session first). When one cannot
    /// start, the caller drains the ones that did (`drainLanes` joins only started threads).
    package func startLanes() throws(WorkerThread.StartFailure) {
        try videoLane?.start()
        for lane in audioLanes { try lane.start() }
        try replay?.start()
    }

    /// Encodes what the lanes hold, flushes the mixer and the encoders, and releases every
    /// staged tag to the destinations. Destinations are finished by the session afterwards.
    package func drainLanes() {
        for lane in audioLanes { lane.finish() }
        mixer?.flush()
        videoLane?.finish()
        interleaver.drain(nowNs: MediaTime.now())
        replay?.stop()
    }
}
