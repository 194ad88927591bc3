import COpus
import COpusShim
import BroadcastCore

/// Opus encoder on libopus: 48 kHz, OPUS_APPLICATION_AUDIO, 20 ms (960-sample) packets.
package final class OpusEncoder: AudioEncoder {
    package let settings: AudioEncoderSettings
    package let frameSize = 960
    package var sequenceHeader: UnsafeRawBufferPointer { UnsafeRawBufferPointer(head) }
    /// The encoder lookahead, also written as OpusHead pre-skip (312 samples with libopus 1.3.1 here).
    let preSkip: Int
    /// Measured, not guessed: clicks at input samples 10_000, 20_001 and 30_037 (48 kHz stereo, 128 kbps),
    /// encoded with this class and decoded by FFmpeg's Opus decoder (PyAV 18.1 / libavcodec 62.28, this
    /// OpusHead as extradata) peaked exactly at the input positions: FFmpeg drops the 312-sample pre-skip,
    /// which equals the encoder lookahead. A decoder ignoring pre-skip would show `preSkip` instead.
    ///
    /// In FLV, though, FFmpeg's demuxer gives the decoder no start-trim information, so the
    /// pre-skip samples are played: the A/V sync run through nginx-rtmp measured audio 6.7 ms
    /// (= 312 samples) late with 0 here. The session shifts Opus tags by the pre-skip.
    package var delaySamples: Int { preSkip }

    /// libopus' OpusEncoder state (an opaque C type, hence the pointer).
    private let state: OpaquePointer
    private let output: UnsafeMutableRawBufferPointer
    private let head: UnsafeMutableRawBufferPointer

    /// Largest packet libopus can produce (RFC 6716 §3.4: 1275 bytes per frame, up to 3 frames) plus framing.
    private static let maxPacketBytes = 4000

    /// Opens libopus for `settings.channels` channels at 48 kHz and `settings.bitrateKbps`.
    package init(settings: AudioEncoderSettings) throws(EncoderError) {
        guard settings.codec == .opus else { throw .invalidSettings("OpusEncoder given codec \(settings.codec)") }
        guard settings.sampleRate == 48_000 else {
            throw .invalidSettings("Opus sample rate \(settings.sampleRate) not 48000")
        }
        guard (1...2).contains(settings.channels) else {
            throw .invalidSettings("Opus channels \(settings.channels) not 1 or 2")
        }
        guard (6...510).contains(settings.bitrateKbps) else {
            throw .invalidSettings("Opus bitrate \(settings.bitrateKbps) kbps outside 6..510")
        }
        self.settings = settings
        var error: Int32 = 0
        guard let st = opus_encoder_create(Int32(settings.sampleRate), Int32(settings.channels),
                                           OPUS_APPLICATION_AUDIO, &error), error == OPUS_OK else {
            throw .libraryFailure("opus_encoder_create: \(String(cString: opus_strerror(error)))")
        }
        var lookahead: Int32 = 0
        let bitrateStatus = bk_opus_set_bitrate(st, Int32(settings.bitrateKbps * 1000))
        let lookaheadStatus = bk_opus_get_lookahead(st, &lookahead)
        guard bitrateStatus == OPUS_OK, lookaheadStatus == OPUS_OK else {
            opus_encoder_destroy(st)
            let status = bitrateStatus != OPUS_OK ? bitrateStatus : lookaheadStatus
            throw .libraryFailure("opus_encoder_ctl: \(String(cString: opus_strerror(status)))")
        }
        state = st
        preSkip = Int(lookahead)
        output = .allocate(byteCount: OpusEncoder.maxPacketBytes, alignment: 16)
        head = .allocate(byteCount: OpusHead.byteCount, alignment: 1)
        OpusHead.write(channels: settings.channels, preSkip: preSkip, inputSampleRate: settings.sampleRate, into: head)
    }

    deinit {
        opus_encoder_destroy(state)
        output.deallocate()
        head.deallocate()
    }

    package func encode(_ samples: UnsafePointer<Float>, timestampMs: Int64, emit: (EncodedPacket) -> Void) -> Bool {
        let bytes = opus_encode_float(state, samples, Int32(frameSize),
                                      output.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(output.count))
        guard bytes > 0 else { return false }
        emit(EncodedPacket(codec: .opus, data: UnsafeRawBufferPointer(start: output.baseAddress, count: Int(bytes)),
                           timestampMs: timestampMs, isKeyframe: true))
        return true
    }
}
