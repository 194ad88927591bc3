import BroadcastCore
import BroadcastPipeline

/// Builders for FLV tag bodies (what an RTMP audio/video message carries).
///
/// Each writer copies into `destination` starting at byte 0 and returns the number of bytes
/// written, or `nil` (writing nothing) when the destination is too small. None allocates.
///
/// - Video: legacy FLV AVC (FLV 10.1 Annex E.4.3, CodecID 7), because nginx-rtmp drops
///   Enhanced-RTMP video.
/// - AAC: legacy SoundFormat 10. The header byte is always 0xAF (AAC, "44 kHz", 16-bit,
///   stereo): the spec says decoders must take the real values from the AudioSpecificConfig.
/// - Opus: Enhanced RTMP v2 ExHeader audio: (9 << 4) | AudioPacketType, then FourCC 'Opus'.
package enum FLVTagBody {
    /// Bytes before the payload of an AVC tag: frame type/codec, AVCPacketType, CompositionTime.
    package static let avcHeaderSize = 5
    /// Bytes before the payload of an AAC tag: sound header byte, AACPacketType.
    package static let aacHeaderSize = 2
    /// Bytes before the payload of an E-RTMP Opus tag: ExHeader byte, FourCC.
    package static let opusHeaderSize = 5

    /// Legacy audio header byte for AAC: SoundFormat 10, rate 3, 16-bit, stereo.
    static let aacSoundHeader: UInt8 = 0xAF
    /// E-RTMP SoundFormat 9 ("ExHeader") in the high nibble.
    static let exHeaderSoundFormat: UInt8 = 9 << 4
    /// FourCC 'Opus' = 0x4F707573.
    static let opusFourCC: UInt32 = 0x4F70_7573

    // MARK: - Sizes

    /// Body size of an AVC tag (sequence header or NALU packet) carrying `payloadCount` bytes.
    static func avcBodySize(payloadCount: Int) -> Int { avcHeaderSize + payloadCount }
    /// Body size of an audio tag of `codec` (sequence header or frame) carrying `payloadCount` bytes.
    static func audioBodySize(codec: AudioCodec, payloadCount: Int) -> Int {
        switch codec {
        case .aac: return aacHeaderSize + payloadCount
        case .opus: return opusHeaderSize + payloadCount
        }
    }

    // MARK: - AVC

    /// AVC sequence header: 17 00 00 00 00 + AVCDecoderConfigurationRecord.
    package static func writeAVCSequenceHeader(configurationRecord: UnsafeRawBufferPointer,
                                              into destination: UnsafeMutableRawBufferPointer) -> Int? {
        writeAVC(frameByte: 0x17, packetType: 0, compositionOffsetMs: 0,
                 payload: configurationRecord, into: destination)
    }

    /// AVC NALU packet: (key ? 17 : 27) 01 + 24-bit signed BE composition offset + AVCC data.
    /// Offsets beyond the 24-bit range are clamped.
    package static func writeAVCFrame(_ avcc: UnsafeRawBufferPointer, compositionOffsetMs: Int32,
                                     isKeyframe: Bool,
                                     into destination: UnsafeMutableRawBufferPointer) -> Int? {
        writeAVC(frameByte: isKeyframe ? 0x17 : 0x27, packetType: 1,
                 compositionOffsetMs: compositionOffsetMs, payload: avcc, into: destination)
    }

    /// AVC end of sequence: 17 02 00 00 00.
    static func writeAVCEndOfSequence(into destination: UnsafeMutableRawBufferPointer) -> Int? {
        writeAVC(frameByte: 0x17, packetType: 2, compositionOffsetMs: 0,
                 payload: UnsafeRawBufferPointer(start: nil, count: 0), into: destination)
    }

    private static func writeAVC(frameByte: UInt8, packetType: UInt8, compositionOffsetMs: Int32,
                                 payload: UnsafeRawBufferPointer,
                                 into destination: UnsafeMutableRawBufferPointer) -> Int? {
        let total = avcBodySize(payloadCount: payload.count)
        guard destination.count >= total else { return nil }
        let cts = UInt32(bitPattern: min(max(compositionOffsetMs, -0x80_0000), 0x7F_FFFF))
        destination[0] = frameByte
        destination[1] = packetType
        destination[2] = UInt8(truncatingIfNeeded: cts >> 16)
        destination[3] = UInt8(truncatingIfNeeded: cts >> 8)
        destination[4] = UInt8(truncatingIfNeeded: cts)
        copy(payload, into: destination, at: avcHeaderSize)
        return total
    }

    // MARK: - AAC

    /// AAC sequence header: AF 00 + AudioSpecificConfig.
    static func writeAACSequenceHeader(audioSpecificConfig: UnsafeRawBufferPointer,
                                              into destination: UnsafeMutableRawBufferPointer) -> Int? {
        writeAAC(packetType: 0, payload: audioSpecificConfig, into: destination)
    }

    /// AAC raw frame: AF 01 + one raw access unit (no ADTS).
    static func writeAACFrame(_ accessUnit: UnsafeRawBufferPointer,
                                     into destination: UnsafeMutableRawBufferPointer) -> Int? {
        writeAAC(packetType: 1, payload: accessUnit, into: destination)
    }

    private static func writeAAC(packetType: UInt8, payload: UnsafeRawBufferPointer,
                                 into destination: UnsafeMutableRawBufferPointer) -> Int? {
        let total = aacHeaderSize + payload.count
        guard destination.count >= total else { return nil }
        destination[0] = aacSoundHeader
        destination[1] = packetType
        copy(payload, into: destination, at: aacHeaderSize)
        return total
    }

    // MARK: - Opus (Enhanced RTMP v2)

    /// Opus SequenceStart: 90 'O' 'p' 'u' 's' + OpusHead (RFC 7845 §5.1).
    static func writeOpusSequenceStart(opusHead: UnsafeRawBufferPointer,
                                              into destination: UnsafeMutableRawBufferPointer) -> Int? {
        writeOpus(packetType: 0, payload: opusHead, into: destination)
    }

    /// Opus CodedFrames: 91 'O' 'p' 'u' 's' + one Opus packet.
    static func writeOpusFrame(_ packet: UnsafeRawBufferPointer,
                                      into destination: UnsafeMutableRawBufferPointer) -> Int? {
        writeOpus(packetType: 1, payload: packet, into: destination)
    }

    private static func writeOpus(packetType: UInt8, payload: UnsafeRawBufferPointer,
                                  into destination: UnsafeMutableRawBufferPointer) -> Int? {
        let total = opusHeaderSize + payload.count
        guard destination.count >= total else { return nil }
        destination[0] = exHeaderSoundFormat | packetType
        destination[1] = UInt8(truncatingIfNeeded: opusFourCC >> 24)
        destination[2] = UInt8(truncatingIfNeeded: opusFourCC >> 16)
        destination[3] = UInt8(truncatingIfNeeded: opusFourCC >> 8)
        destination[4] = UInt8(truncatingIfNeeded: opusFourCC)
        copy(payload, into: destination, at: opusHeaderSize)
        return total
    }

    // MARK: - Audio by codec

    /// Sequence header for `codec`: AudioSpecificConfig (AAC) or OpusHead (Opus).
    static func writeAudioSequenceHeader(codec: AudioCodec, config: UnsafeRawBufferPointer,
                                                into destination: UnsafeMutableRawBufferPointer) -> Int? {
        switch codec {
        case .aac: return writeAACSequenceHeader(audioSpecificConfig: config, into: destination)
        case .opus: return writeOpusSequenceStart(opusHead: config, into: destination)
        }
    }

    /// One encoded audio frame of `codec`.
    static func writeAudioFrame(codec: AudioCodec, _ data: UnsafeRawBufferPointer,
                                       into destination: UnsafeMutableRawBufferPointer) -> Int? {
        switch codec {
        case .aac: return writeAACFrame(data, into: destination)
        case .opus: return writeOpusFrame(data, into: destination)
        }
    }

    private static func copy(_ payload: UnsafeRawBufferPointer,
                             into destination: UnsafeMutableRawBufferPointer, at offset: Int) {
        guard let source = payload.baseAddress, payload.count > 0,
              let base = destination.baseAddress else { return }
        (base + offset).copyMemory(from: source, byteCount: payload.count)
    }
}
