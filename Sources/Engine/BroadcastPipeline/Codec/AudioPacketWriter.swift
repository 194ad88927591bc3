import BroadcastCore

/// The mixer's output stage: encodes each mixed frame and stages the packets in the interleaver.
///
/// Decoders play each packet `delaySamples` late (AAC priming, Opus pre-skip), so packets are
/// stamped that much earlier. The first packets land before zero. AAC ones go on as priming
/// (`EncodedPacket.isPriming`): the MP4 recorder keeps them under its edit list, so the stream's first
/// samples decode whole; FLV, RTMP, SRT and WHIP cannot carry a time before 0 and never see
/// them. Opus ones are encoded (so the encoder's state stays continuous) but not sent, rather
/// than clamped onto one repeated timestamp.
package final class AudioPacketWriter: @unchecked Sendable {
    private let encoder: AudioEncoder
    private let interleaver: Interleaver
    /// Encoder delay in 48 kHz samples.
    package let delaySamples: Int64
    /// AAC: the packets before 0 go on as priming.
    private let sendsPriming: Bool

    package init(encoder: AudioEncoder, interleaver: Interleaver) {
        self.encoder = encoder
        self.interleaver = interleaver
        delaySamples = Int64(encoder.delaySamples)
        sendsPriming = encoder.settings.codec == .aac
    }

    /// Encodes one mixer frame that starts at timeline sample `position`.
    package func encode(_ samples: UnsafePointer<Float>, position: Int64) {
        let shifted = position - delaySamples
        // Before 0: floor, so a priming packet orders strictly before the first real one.
        let ms = shifted >= 0 ? shifted * 1000 / AudioClock.rate : (shifted * 1000 - AudioClock.rate + 1) / AudioClock.rate
        let interleaver = self.interleaver
        let sendsPriming = self.sendsPriming
        _ = encoder.encode(samples, timestampMs: ms) { p in
            let isPriming = p.timestampMs < 0
            guard !isPriming || sendsPriming else { return }
            var packet = p
            packet.isPriming = isPriming
            packet.isKeyframe = false   // the flag means a video sync point to the queues and sinks
            interleaver.submit(packet, nowNs: MediaTime.now())
        }
    }
}
