import BroadcastCore
import BroadcastPipeline

/// An `EncodedPacket` as an FLV tag: the tag-body prefix FLV puts before each codec payload
/// (`FLVTagBody`), written into the packet's headroom so that the body is contiguous without a copy.
///
/// RTMP and FLV files send the result; a `TagSink` an embedder supplies receives it. The prefix:
/// H.264 `17|27 00|01` + the 24-bit composition offset (5 bytes), AAC `AF 00|01` (2), Opus
/// `90|91 'Opus'` (5), metadata nothing (the payload is already the script body).
extension EncodedPacket {
    /// The FLV tag type of this packet's track.
    package var flvTagType: FLVTagType {
        switch codec {
        case .h264: return .video
        case .aac, .opus: return .audio
        case .metadata: return .scriptData
        }
    }

    /// Bytes of FLV framing before the payload.
    package var flvPrefixSize: Int {
        switch codec {
        case .h264: return FLVTagBody.avcHeaderSize
        case .aac: return FLVTagBody.aacHeaderSize
        case .opus: return FLVTagBody.opusHeaderSize
        case .metadata: return 0
        }
    }

    /// The FLV tag body's size: prefix plus payload.
    package var flvBodySize: Int { flvPrefixSize + data.count }

    /// Calls `body` with this packet as an FLV tag, its prefix written into the headroom in front
    /// of the payload (the packet's own bytes: nothing else reads them). The tag is valid only
    /// during the call.
    package func withFLVTag<E: Error>(_ body: (FLVTag) throws(E) -> Void) throws(E) {
        let n = flvPrefixSize
        precondition(headroom >= n, "an EncodedPacket framed as FLV needs \(n) bytes of headroom")
        let start = UnsafeMutableRawPointer(mutating: data.baseAddress.map { $0 - n })
        if let p = start { FLVTagBody.writePrefix(of: self, to: p) }
        let tagBody = UnsafeRawBufferPointer(start: start.map { UnsafeRawPointer($0) }, count: n + data.count)
        try body(FLVTag(type: flvTagType, timestampMs: UInt32(truncatingIfNeeded: timestampMs), body: tagBody,
                        isKeyframe: isKeyframe, isHeader: isConfig, captureNs: captureNs, isPriming: isPriming))
    }
}

extension FLVTagBody {
    /// Writes `packet`'s FLV prefix (`packet.flvPrefixSize` bytes) at `p`.
    package static func writePrefix(of packet: EncodedPacket, to p: UnsafeMutableRawPointer) {
        switch packet.codec {
        case .h264:
            let cts = UInt32(bitPattern: min(max(packet.compositionOffsetMs, -0x80_0000), 0x7F_FFFF))
            p.storeBytes(of: packet.isConfig || packet.isKeyframe ? 0x17 : 0x27, as: UInt8.self)
            p.storeBytes(of: packet.isConfig ? 0 : 1, toByteOffset: 1, as: UInt8.self)
            p.storeBytes(of: UInt8(truncatingIfNeeded: cts >> 16), toByteOffset: 2, as: UInt8.self)
            p.storeBytes(of: UInt8(truncatingIfNeeded: cts >> 8), toByteOffset: 3, as: UInt8.self)
            p.storeBytes(of: UInt8(truncatingIfNeeded: cts), toByteOffset: 4, as: UInt8.self)
        case .aac:
            p.storeBytes(of: aacSoundHeader, as: UInt8.self)
            p.storeBytes(of: packet.isConfig ? 0 : 1, toByteOffset: 1, as: UInt8.self)
        case .opus:
            p.storeBytes(of: exHeaderSoundFormat | (packet.isConfig ? 0 : 1), as: UInt8.self)
            p.storeBytes(of: UInt8(truncatingIfNeeded: opusFourCC >> 24), toByteOffset: 1, as: UInt8.self)
            p.storeBytes(of: UInt8(truncatingIfNeeded: opusFourCC >> 16), toByteOffset: 2, as: UInt8.self)
            p.storeBytes(of: UInt8(truncatingIfNeeded: opusFourCC >> 8), toByteOffset: 3, as: UInt8.self)
            p.storeBytes(of: UInt8(truncatingIfNeeded: opusFourCC), toByteOffset: 4, as: UInt8.self)
        case .metadata:
            break
        }
    }
}
