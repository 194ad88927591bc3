import BroadcastCore
import BroadcastPipeline
import BroadcastFLV

/// Test fixtures speak FLV bytes, as the wire does; the pipeline's sinks take encoded packets.
/// This reads an FLV tag as the packet it carries, in place: the tag body's prefix becomes the
/// packet's headroom, so a sink that frames the packet as FLV again rebuilds the very bytes.
extension FLVTag {
    /// The packet this tag carries (a body too short for its prefix gives an empty payload).
    package var packet: EncodedPacket {
        let b = body
        var codec = PacketCodec.metadata
        var isConfig = isHeader
        var prefix = 0
        var cts: Int32 = 0
        var key = isKeyframe
        switch type {
        case .scriptData:
            isConfig = true
        case .video:
            codec = .h264
            prefix = FLVTagBody.avcHeaderSize
            if b.count >= prefix {
                isConfig = b[1] == 0
                let raw = Int32(b[2]) << 16 | Int32(b[3]) << 8 | Int32(b[4])
                cts = raw & 0x80_0000 != 0 ? raw - 0x100_0000 : raw
                key = key || b[0] >> 4 == 1
            }
        case .audio:
            if b.count > 0 && b[0] >> 4 == 9 {
                codec = .opus
                prefix = FLVTagBody.opusHeaderSize
                isConfig = b[0] & 0x0F == 0
            } else {
                codec = .aac
                prefix = FLVTagBody.aacHeaderSize
                if b.count >= prefix { isConfig = b[1] == 0 }
            }
        }
        prefix = min(prefix, b.count)
        let payload = UnsafeRawBufferPointer(start: b.baseAddress.map { $0 + prefix }, count: b.count - prefix)
        return EncodedPacket(codec: codec, data: payload, timestampMs: Int64(timestampMs), compositionOffsetMs: cts,
                             isKeyframe: key && codec == .h264, isConfig: isConfig, isPriming: isPriming,
                             captureNs: captureNs, headroom: prefix)
    }
}

extension EncodedPacket {
    /// The packet an FLV tag body of `track` carries (`FLVTag.packet`), for the layers' tests that
    /// write FLV bytes but do not see the FLV module (SRT's TS muxer).
    package static func fromFLVBody(_ track: TrackKind, timestampMs: UInt32, body: UnsafeRawBufferPointer,
                                    isKeyframe: Bool = false, isHeader: Bool = false) -> EncodedPacket {
        let type: FLVTagType = track == .video ? .video : track == .audio ? .audio : .scriptData
        return FLVTag(type: type, timestampMs: timestampMs, body: body, isKeyframe: isKeyframe, isHeader: isHeader).packet
    }
}

/// A packet sink's `write` with an FLV tag, read as its packet.
extension PacketSink {
    package func write(_ tag: FLVTag) throws(TransportError) { try write(tag.packet) }
}

extension EncodedPacket {
    /// A packet of a track with a dummy payload (no FLV body to read it from): H.264 for video,
    /// AAC for audio, metadata for data.
    package static func of(_ track: TrackKind, timestampMs: Int64, data: UnsafeRawBufferPointer, isKeyframe: Bool = false,
                           isConfig: Bool = false, isPriming: Bool = false, captureNs: Int64 = 0) -> EncodedPacket {
        let codec: PacketCodec = track == .video ? .h264 : track == .audio ? .aac : .metadata
        return EncodedPacket(codec: codec, data: data, timestampMs: timestampMs, isKeyframe: isKeyframe,
                             isConfig: isConfig || track == .data, isPriming: isPriming, captureNs: captureNs)
    }
}

extension Interleaver {
    /// Stages a packet of `track` whose payload `write` fills (`payloadSize` bytes, on the stack for
    /// small ones), as the encoders' writers do.
    package func submit(type: TrackKind, timestampMs: Int64, isKeyframe: Bool, bodySize payloadSize: Int, nowNs: Int64,
                        captureNs: Int64 = 0, isPriming: Bool = false, write: (UnsafeMutableRawBufferPointer) -> Void) {
        withUnsafeTemporaryAllocation(byteCount: max(1, payloadSize), alignment: 16) { buf in
            let payload = UnsafeMutableRawBufferPointer(rebasing: buf[0..<payloadSize])
            write(payload)
            submit(.of(type, timestampMs: timestampMs, data: UnsafeRawBufferPointer(payload), isKeyframe: isKeyframe,
                       isPriming: isPriming, captureNs: captureNs), nowNs: nowNs)
        }
    }
}
