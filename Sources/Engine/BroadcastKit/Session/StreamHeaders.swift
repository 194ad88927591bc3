import BroadcastCore
import BroadcastPipeline
import BroadcastFLV

/// The packets every destination gets first, and again after each reconnect: `onMetaData` and the
/// codec configurations (avcC, AudioSpecificConfig or OpusHead), marked `isConfig` so the send
/// queue never drops them.
struct StreamHeaders {
    private let metadata: StreamMetadata
    private let videoEncoder: VideoEncoder?
    private let audioEncoder: AudioEncoder?

    /// `video` and `audio` are the configured settings (the video encoder's own, after a budget
    /// downgrade, win); `encoderName` is onMetaData's `encoder` field.
    init(video configured: VideoEncoderSettings, audio: AudioEncoderSettings, encoderName: String,
                 videoEncoder: VideoEncoder?, audioEncoder: AudioEncoder?) {
        let video = videoEncoder?.settings ?? configured
        metadata = StreamMetadata(hasVideo: videoEncoder != nil, hasAudio: audioEncoder != nil, width: video.width,
                                  height: video.height, framerate: Double(video.fps),
                                  videoDataRateKbps: video.bitrateKbps, audioCodec: audio.codec,
                                  audioDataRateKbps: audio.bitrateKbps, audioSampleRate: audio.sampleRate,
                                  audioChannels: audio.channels, encoder: encoderName)
        self.videoEncoder = videoEncoder
        self.audioEncoder = audioEncoder
    }

    /// Hands each configuration packet to `push`, in the order a player needs them: the metadata
    /// (as FLV script data), the avcC, the AudioSpecificConfig or OpusHead. Runs once per
    /// destination at start, so its scratch buffer is not on the hot path.
    func forEach(_ push: (EncodedPacket) -> Void) {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
        defer { scratch.deallocate() }
        if let n = metadata.write(into: scratch) {
            push(EncodedPacket(codec: .metadata, data: UnsafeRawBufferPointer(rebasing: scratch[0..<n]), timestampMs: 0,
                               isKeyframe: false, isConfig: true))
        }
        if let enc = videoEncoder {
            push(EncodedPacket(codec: .h264, data: enc.decoderConfigurationRecord, timestampMs: 0, isKeyframe: true,
                               isConfig: true))
        }
        if let aenc = audioEncoder {
            push(EncodedPacket(codec: PacketCodec(aenc.settings.codec), data: aenc.sequenceHeader, timestampMs: 0,
                               isKeyframe: false, isConfig: true))
        }
    }
}
