import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording

/// The replay buffer's part of the assembly: the ring (before the interleaver, whose output
/// feeds it), its line in the memory plan, and the clip saver (after the encoders, whose codec
/// configurations the MP4 needs).
enum ReplayAssembly {
    /// The ring for `cfg.replay.seconds`, or nil when the replay buffer is off.
    static func makeRing(_ cfg: BroadcastConfiguration) -> ReplayRing? {
        guard cfg.replay.seconds > 0 else { return nil }
        return ReplayRing(seconds: cfg.replay.seconds, capacity: capacity(cfg, seconds: cfg.replay.seconds),
                          hasVideo: cfg.hasVideo, audioCodec: cfg.hasAudio ? cfg.audio.codec : nil)
    }

    static func capacity(_ cfg: BroadcastConfiguration, seconds: Int) -> ReplayRing.Capacity {
        ReplayRing.capacity(seconds: seconds, video: cfg.hasVideo ? cfg.video : nil, audio: cfg.hasAudio ? cfg.audio : nil)
    }

    /// Puts the ring on the plan.
    static func plan(_ plan: inout MemoryPlan, ring: ReplayRing?) {
        guard let ring else { return }
        plan.replayBytes = ring.capacity.reservedBytes
        plan.replaySeconds = ring.seconds
    }

    /// When the plan does not fit: the longest ring that would, everything else unchanged.
    static func noteLongestFit(_ plan: inout MemoryPlan, _ cfg: BroadcastConfiguration) {
        guard plan.replaySeconds > 0, !plan.fits else { return }
        var trial = plan
        var n = plan.replaySeconds - 1
        while n > 0 {
            trial.replayBytes = capacity(cfg, seconds: n).reservedBytes
            if trial.fits { break }
            n -= 1
        }
        plan.replayLongestFit = n
    }

    /// The clip saver over `ring`, with the encoders' configuration records for the MP4.
    static func makeSaver(_ ring: ReplayRing?, _ cfg: BroadcastConfiguration, video: VideoEncoder?,
                                  audio: AudioEncoder?) -> ReplaySaver? {
        guard let ring else { return nil }
        return ReplaySaver(ring: ring, layout: layout(cfg, video: video, audio: audio), settings: cfg.replay)
    }

    /// The MP4 tracks of a session's encoders.
    static func layout(_ cfg: BroadcastConfiguration, video: VideoEncoder?, audio: AudioEncoder?) -> MP4TrackLayout {
        let v = video.map { enc in
            MP4TrackLayout.Video(width: enc.settings.width, height: enc.settings.height, fps: enc.settings.fps,
                                 avcC: Array(enc.decoderConfigurationRecord))
        }
        let a = audio.map { enc in
            MP4TrackLayout.Audio(codec: enc.settings.codec, sampleRate: enc.settings.sampleRate,
                                 channels: enc.settings.channels, bitrateKbps: enc.settings.bitrateKbps,
                                 frameSize: enc.frameSize, config: Array(enc.sequenceHeader),
                                 primingSamples: MP4TrackLayout.Audio.priming(
                                     codec: enc.settings.codec, encoderDelaySamples: enc.delaySamples,
                                     sampleRate: enc.settings.sampleRate))
        }
        return MP4TrackLayout(video: v, audio: a)
    }
}
