import BroadcastCore

/// The tags every destination gets first, and again after each reconnect: `onMetaData` and the
/// codec sequence headers (avcC, AudioSpecificConfig or OpusHead), marked as headers so the
/// send queue never drops them.
package struct StreamHeaders {
    private let metadata: StreamMetadata
    private let videoEncoder: VideoEncoder?
    private let audioEncoder: AudioEncoder?

    /// `video` and `audio` are the configured settings (the video encoder's own, after a budget
    /// downgrade, win); `encoderName` is onMetaData's `encoder` field.
    package init(video configured: VideoEncoderSettings, audio: AudioEncoderSettings, encoderName: String,
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

    /// Hands each header tag to `push`, in the order a player needs them. Runs once per
    /// destination at start, so its scratch buffer is not on the hot path.
    package func forEach(_ push: (FLVTag) -> Void) {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
        defer { scratch.deallocate() }
        if let n = metadata.write(into: scratch) {
            push(FLVTag(type: .scriptData, timestampMs: 0, body: UnsafeRawBufferPointer(rebasing: scratch[0..<n]),
                        isHeader: true))
        }
        if let enc = videoEncoder,
           let n = FLVTagBody.writeAVCSequenceHeader(configurationRecord: enc.decoderConfigurationRecord, into: scratch) {
            push(FLVTag(type: .video, timestampMs: 0, body: UnsafeRawBufferPointer(rebasing: scratch[0..<n]),
                        isKeyframe: true, isHeader: true))
        }
        if let aenc = audioEncoder,
           let n = FLVTagBody.writeAudioSequenceHeader(codec: aenc.settings.codec, config: aenc.sequenceHeader,
                                                        into: scratch) {
            push(FLVTag(type: .audio, timestampMs: 0, body: UnsafeRawBufferPointer(rebasing: scratch[0..<n]),
                        isHeader: true))
        }
    }
}
