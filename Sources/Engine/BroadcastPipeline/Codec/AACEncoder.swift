import CVoAACEnc
import BroadcastCore

/// AAC-LC encoder on libvo-aacenc: raw access units (no ADTS) of 1024 samples per channel.
///
/// Input is interleaved Float32; it is converted to S16 in a preallocated scratch buffer.
package final class AACEncoder: AudioEncoder {
    package let settings: AudioEncoderSettings
    package let frameSize = 1024
    package var sequenceHeader: UnsafeRawBufferPointer { UnsafeRawBufferPointer(audioSpecificConfig) }
    /// Measured, not guessed: clicks at input samples 10_000, 20_001 and 30_037 (48 kHz stereo, 128 kbps),
    /// encoded with this class (one packet per 1024-sample frame, stamped with that frame's time) and
    /// decoded by FFmpeg's AAC decoder (PyAV 18.1 / libavcodec 62.28, ASC as extradata, no priming trim,
    /// as on FFmpeg's FLV path), peaked at input + 1600 every time (onset at +1596).
    /// `test_codec_delay.py` checks the outcome on every run: a click decoded by PyAV plays within
    /// 2 ms of its capture time.
    package let delaySamples = 1600

    private var api = VO_AUDIO_CODECAPI()
    private let handle: VO_HANDLE
    /// vo-aacenc keeps the pointer to its memory operator, so it lives as long as the encoder.
    private let memoryOperator: UnsafeMutablePointer<VO_MEM_OPERATOR>
    private let scratch: UnsafeMutablePointer<Int16>
    private let output: UnsafeMutableRawBufferPointer
    private let audioSpecificConfig: UnsafeMutableRawBufferPointer

    /// Opens vo-aacenc for AAC-LC at `settings.sampleRate` / `settings.channels` / `settings.bitrateKbps`.
    package init(settings: AudioEncoderSettings) throws(EncoderError) {
        guard settings.codec == .aac else { throw .invalidSettings("AACEncoder given codec \(settings.codec)") }
        guard let rateIndex = AACEncoder.samplingFrequencyIndex(settings.sampleRate) else {
            throw .invalidSettings("AAC sample rate \(settings.sampleRate) is not an MPEG-4 rate")
        }
        guard (1...2).contains(settings.channels) else {
            throw .invalidSettings("AAC channels \(settings.channels) not 1 or 2")
        }
        guard (8...320).contains(settings.bitrateKbps) else {
            throw .invalidSettings("AAC bitrate \(settings.bitrateKbps) kbps outside 8..320")
        }
        self.settings = settings

        var api = VO_AUDIO_CODECAPI()
        guard voGetAACEncAPI(&api) == VO_ERR_NONE, let initCodec = api.Init, let setParam = api.SetParam,
              api.SetInputData != nil, api.GetOutputData != nil, let uninit = api.Uninit else {
            throw .libraryFailure("voGetAACEncAPI failed")
        }
        let memOp = UnsafeMutablePointer<VO_MEM_OPERATOR>.allocate(capacity: 1)
        memOp.initialize(to: VO_MEM_OPERATOR(Alloc: cmnMemAlloc, Free: cmnMemFree, Set: cmnMemSet,
                                             Copy: cmnMemCopy, Check: cmnMemCheck, Compare: cmnMemCompare,
                                             Move: cmnMemMove))
        var userData = VO_CODEC_INIT_USERDATA(memflag: VO_IMF_USERMEMOPERATOR, memData: UnsafeMutableRawPointer(memOp),
                                              reserved1: 0, reserved2: 0)
        var h: VO_HANDLE?
        guard initCodec(&h, VO_AUDIO_CodingAAC, &userData) == VO_ERR_NONE, let h else {
            memOp.deallocate()
            throw .libraryFailure("vo-aacenc Init failed")
        }
        var param = AACENC_PARAM(sampleRate: Int32(settings.sampleRate), bitRate: Int32(settings.bitrateKbps * 1000),
                                 nChannels: Int16(settings.channels), adtsUsed: 0)
        let status = setParam(h, VO_S32(AACEncoder.encoderParamID), &param)
        guard status == VO_ERR_NONE else {
            _ = uninit(h)
            memOp.deallocate()
            throw .libraryFailure("vo-aacenc rejected \(settings.sampleRate) Hz, \(settings.channels) ch, \(settings.bitrateKbps) kbps (0x\(String(status, radix: 16)))")
        }
        self.api = api
        handle = h
        memoryOperator = memOp
        scratch = .allocate(capacity: frameSize * settings.channels)
        // An AAC frame is at most 6144 bits per channel (ISO 14496-3 §4.5.3); generous slack on top.
        output = .allocate(byteCount: 768 * settings.channels + 1024, alignment: 16)
        audioSpecificConfig = .allocate(byteCount: 2, alignment: 1)
        AACEncoder.writeAudioSpecificConfig(rateIndex: rateIndex, channels: settings.channels, into: audioSpecificConfig)
    }

    deinit {
        _ = api.Uninit?(handle)
        memoryOperator.deallocate()
        scratch.deallocate()
        output.deallocate()
        audioSpecificConfig.deallocate()
    }

    package func encode(_ samples: UnsafePointer<Float>, timestampMs: Int64, emit: (EncodedPacket) -> Void) -> Bool {
        let count = frameSize * settings.channels
        for i in 0..<count {
            let s = samples[i] * 32767
            // NaN fails both comparisons and would trap Int16(_:). The lanes replace NaN and the
            // mixer clips, so none arrives from a session; this keeps the encoder safe on its own.
            scratch[i] = s >= 32767 ? 32767 : (s <= -32768 ? -32768 : (s.isNaN ? 0 : Int16(s.rounded())))
        }
        var input = VO_CODECBUFFER(Buffer: UnsafeMutableRawPointer(scratch).assumingMemoryBound(to: UInt8.self),
                                   Length: VO_U32(count * 2), Time: 0)
        guard api.SetInputData!(handle, &input) == VO_ERR_NONE else { return false }
        while true {
            var out = VO_CODECBUFFER(Buffer: output.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                     Length: VO_U32(output.count), Time: 0)
            var info = VO_AUDIO_OUTPUTINFO()
            let status = api.GetOutputData!(handle, &out, &info)
            if status == VO_ERR_INPUT_BUFFER_SMALL { return true }
            guard status == VO_ERR_NONE else { return false }
            if out.Length > 0 {
                emit(EncodedPacket(codec: .aac, data: UnsafeRawBufferPointer(start: output.baseAddress, count: Int(out.Length)),
                                   timestampMs: timestampMs, isKeyframe: true))
            }
        }
    }

    /// VO_PID_AAC_ENCPARAM (0x42211000 | 0x0040); spelled out because the C macro is unparenthesised.
    /// VO_S32 is C `long` here, so the positive value passes unchanged.
    static let encoderParamID: UInt32 = 0x4221_1040

    /// ISO 14496-3 Table 1.18 samplingFrequencyIndex.
    static func samplingFrequencyIndex(_ rate: Int) -> UInt8? {
        let rates = [96_000, 88_200, 64_000, 48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025, 8_000, 7_350]
        return rates.firstIndex(of: rate).map { UInt8($0) }
    }

    /// AudioSpecificConfig (ISO 14496-3 §1.6.2.1): 5 bits object type 2 (AAC-LC), 4 bits rate index,
    /// 4 bits channel configuration, then GASpecificConfig's three zero flags
    /// (frameLengthFlag = 1024 samples, dependsOnCoreCoder, extensionFlag).
    static func writeAudioSpecificConfig(rateIndex: UInt8, channels: Int, into out: UnsafeMutableRawBufferPointer) {
        let bits: UInt16 = (2 << 11) | (UInt16(rateIndex) << 7) | (UInt16(channels) << 3)
        out[0] = UInt8(bits >> 8)
        out[1] = UInt8(bits & 0xFF)
    }
}
