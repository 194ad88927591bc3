/// The mixer's output stage: encodes each mixed frame and stages the packets as FLV audio tags.
///
/// Decoders play each packet `delaySamples` late (AAC priming, Opus pre-skip), so packets are
/// stamped that much earlier. The first packets would land before zero: they are encoded (so
/// the encoder's state stays continuous) but not sent, rather than clamped onto one repeated
/// timestamp.
package final class AudioTagWriter: @unchecked Sendable {
    private let encoder: AudioEncoder
    private let interleaver: Interleaver
    private let codec: AudioCodec
    /// Encoder delay in 48 kHz samples.
    package let delaySamples: Int64

    package init(encoder: AudioEncoder, interleaver: Interleaver) {
        self.encoder = encoder
        self.interleaver = interleaver
        codec = encoder.settings.codec
        delaySamples = Int64(encoder.delaySamples)
    }

    /// Encodes one mixer frame that starts at timeline sample `position`.
    package func encode(_ samples: UnsafePointer<Float>, position: Int64) {
        let shifted = position - delaySamples
        let ms = shifted >= 0 ? shifted * 1000 / AudioClock.rate : -1
        let codec = self.codec
        let interleaver = self.interleaver
        _ = encoder.encode(samples, timestampMs: ms) { p in
            guard p.timestampMs >= 0 else { return }
            interleaver.submit(type: .audio, timestampMs: p.timestampMs, isKeyframe: false,
                               bodySize: FLVTagBody.audioBodySize(codec: codec, payloadCount: p.data.count),
                               nowNs: MediaTime.now()) { dst in
                _ = FLVTagBody.writeAudioFrame(codec: codec, p.data, into: dst)
            }
        }
    }
}
