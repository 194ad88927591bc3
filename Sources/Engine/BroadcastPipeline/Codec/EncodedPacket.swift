import BroadcastCore

/// Which track a packet belongs to.
package enum TrackKind: Sendable, BitwiseCopyable {
    case video, audio
    /// The stream's description (FLV `onMetaData`), which only the FLV-speaking destinations carry.
    case data
}

/// What an encoded packet's payload is, and so which track it is on and how each destination
/// frames it.
package enum PacketCodec: UInt8, Sendable, BitwiseCopyable {
    /// H.264: AVCC access units; the configuration is an AVCDecoderConfigurationRecord (avcC).
    case h264
    /// AAC-LC: raw access units (no ADTS); the configuration is an AudioSpecificConfig.
    case aac
    /// Opus: one Opus packet each; the configuration is an OpusHead (RFC 7845 §5.1).
    case opus
    /// The stream's metadata as FLV's script data (`@setDataFrame` `onMetaData`, AMF0).
    case metadata

    /// The audio track's packets.
    package init(_ audio: AudioCodec) {
        switch audio {
        case .aac: self = .aac
        case .opus: self = .opus
        }
    }

    package var track: TrackKind {
        switch self {
        case .h264: return .video
        case .aac, .opus: return .audio
        case .metadata: return .data
        }
    }
}

/// One encoded packet, the pipeline's currency from the encoders to every destination: codec,
/// times and flags, and a reference to its payload. No container's framing is in it; each
/// destination muxes its own wire format (FLV for RTMP and FLV files, TS for SRT, RTP for WHIP,
/// fragmented MP4).
///
/// The payload is borrowed: from the encoder until its next call, from the interleaver's staging
/// while a release is delivered, from a send queue's ring while its sender writes it. A packet a
/// send queue hands out has `headroom` bytes before the payload that belong to it
/// (`framingHeadroom`), so a destination that frames in place (FLV's 2-5 byte tag-body prefix,
/// `BroadcastFLV`) copies nothing.
package struct EncodedPacket: @unchecked Sendable {
    package var codec: PacketCodec
    /// H.264 data is AVCC (4-byte length-prefixed NAL units, no start codes, no SPS/PPS); AAC data is
    /// one raw access unit; Opus data is one Opus packet; a configuration packet holds the codec's
    /// configuration record (see `PacketCodec`).
    package var data: UnsafeRawBufferPointer
    /// Decode time on the session timeline, in milliseconds. Negative only for AAC priming before
    /// the interleaver releases it (then 0 with `isPriming`).
    package var timestampMs: Int64
    /// Presentation minus decode time (0 without B-frames).
    package var compositionOffsetMs: Int32
    package var isKeyframe: Bool
    /// The codec's configuration or the stream's metadata: sent first and again after every
    /// reconnect, never dropped by a queue.
    package var isConfig: Bool
    /// An AAC packet the encoder emitted before the stream's time 0 (see `DestinationCapabilities.takesPriming`).
    package var isPriming: Bool
    /// CLOCK_MONOTONIC time the source buffer reached `process()` (0 if unknown): the start of the
    /// capture-to-socket latency.
    package var captureNs: Int64
    /// Writable bytes just before `data` that belong to this packet (0: none).
    package var headroom: Int

    package var track: TrackKind { codec.track }

    package init(codec: PacketCodec, data: UnsafeRawBufferPointer, timestampMs: Int64, compositionOffsetMs: Int32 = 0,
                 isKeyframe: Bool, isConfig: Bool = false, isPriming: Bool = false, captureNs: Int64 = 0,
                 headroom: Int = 0) {
        self.codec = codec
        self.data = data
        self.timestampMs = timestampMs
        self.compositionOffsetMs = compositionOffsetMs
        self.isKeyframe = isKeyframe
        self.isConfig = isConfig
        self.isPriming = isPriming
        self.captureNs = captureNs
        self.headroom = headroom
    }

    /// Presentation time in milliseconds.
    package var presentationMs: Int64 { timestampMs + Int64(compositionOffsetMs) }

    /// The headroom a send queue keeps before every payload: room for the largest framing a
    /// destination writes in place (FLV's 5-byte tag-body prefix for H.264 and Opus).
    package static let framingHeadroom = 5

    /// What the stats and the bitrate controller count for this packet: the payload plus the bytes
    /// RTMP's FLV framing adds to it (5 for H.264 and Opus, 2 for AAC, none for metadata), so that
    /// every destination kind reports on the one scale the stats have always used.
    package var accountedBytes: Int {
        switch codec {
        case .h264, .opus: return data.count + 5
        case .aac: return data.count + 2
        case .metadata: return data.count
        }
    }
}
