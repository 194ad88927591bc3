import Testing
@testable import BroadcastFLV
import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// An `EncodedPacket` framed as FLV in its headroom is byte for byte the tag body the FLV writers
/// build (what RTMP and the FLV file sent when FLV was the pipeline's currency), for every codec
/// and kind; and the framing touches only the packet's own headroom.
@Suite(.timeLimit(.minutes(1))) struct FLVPacketFramingTests {
    /// `payload` behind `headroom` bytes of 0xEE, with a guard byte before them.
    func framed(_ codec: PacketCodec, _ payload: [UInt8], ms: Int64 = 1234, cts: Int32 = 0, key: Bool = false,
                config: Bool = false) -> (type: FLVTagType, ts: UInt32, body: [UInt8], key: Bool, header: Bool, guardByte: UInt8) {
        var storage = [UInt8](repeating: 0xEE, count: 1 + EncodedPacket.framingHeadroom) + payload
        return storage.withUnsafeMutableBytes { raw in
            let start = 1 + EncodedPacket.framingHeadroom
            let p = EncodedPacket(codec: codec, data: UnsafeRawBufferPointer(rebasing: raw[start...]), timestampMs: ms,
                                  compositionOffsetMs: cts, isKeyframe: key, isConfig: config,
                                  headroom: EncodedPacket.framingHeadroom)
            var out: (FLVTagType, UInt32, [UInt8], Bool, Bool) = (.scriptData, 0, [], false, false)
            p.withFLVTag { (t) throws(Never) in out = (t.type, t.timestampMs, Array(t.body), t.isKeyframe, t.isHeader) }
            return (out.0, out.1, out.2, out.3, out.4, raw[0])
        }
    }

    func built(_ n: Int, _ write: (UnsafeMutableRawBufferPointer) -> Int?) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: n)
        let used = b.withUnsafeMutableBytes { write($0) }!
        return Array(b[0..<used])
    }

    @Test func h264FramesAndConfigurationMatchTheFLVWriters() {
        let avcc: [UInt8] = [0, 0, 0, 3, 0x65, 1, 2]
        for (key, cts) in [(true, Int32(0)), (false, 66), (false, -33), (true, 0x90_0000)] {
            let f = framed(.h264, avcc, cts: cts, key: key)
            let expected = built(64) { dst in
                avcc.withUnsafeBytes { FLVTagBody.writeAVCFrame($0, compositionOffsetMs: cts, isKeyframe: key, into: dst) }
            }
            #expect(f.body == expected, "key \(key) cts \(cts)")
            #expect(f.type == .video && f.ts == 1234 && f.key == key && !f.header)
            #expect(f.guardByte == 0xEE)
        }
        let record: [UInt8] = [1, 0x42, 0xC0, 0x1F, 0xFF, 0xE1, 0, 1, 0x67]
        let f = framed(.h264, record, ms: 0, key: true, config: true)
        let expected = built(64) { dst in record.withUnsafeBytes { FLVTagBody.writeAVCSequenceHeader(configurationRecord: $0, into: dst) } }
        #expect(f.body == expected && f.header)
    }

    @Test func audioFramesAndConfigurationMatchTheFLVWriters() {
        let payload: [UInt8] = [0x21, 0x10, 0x04]
        for codec in AudioCodec.allCases {
            let frame = framed(PacketCodec(codec), payload)
            #expect(frame.body == built(64) { dst in payload.withUnsafeBytes { FLVTagBody.writeAudioFrame(codec: codec, $0, into: dst) } })
            #expect(frame.type == .audio && frame.guardByte == 0xEE)
            let config = framed(PacketCodec(codec), payload, config: true)
            #expect(config.body == built(64) { dst in
                payload.withUnsafeBytes { FLVTagBody.writeAudioSequenceHeader(codec: codec, config: $0, into: dst) }
            })
            #expect(config.header)
        }
    }

    @Test func metadataIsItsOwnBody() {
        let script: [UInt8] = [0x02, 0x00, 0x0A] + Array("onMetaData".utf8)
        let f = framed(.metadata, script, ms: 0, config: true)
        #expect(f.type == .scriptData && f.body == script && f.header)
    }

    /// The stats count every destination's packets on RTMP's scale (`EncodedPacket.accountedBytes`,
    /// in the pipeline, which cannot see FLV): it must stay the FLV body's size.
    @Test func theAccountedBytesAreTheFLVBodySize() {
        let payload: [UInt8] = [1, 2, 3, 4, 5, 6, 7]
        payload.withUnsafeBytes { b in
            for codec in [PacketCodec.h264, .aac, .opus, .metadata] {
                for config in [false, true] {
                    let p = EncodedPacket(codec: codec, data: b, timestampMs: 0, isKeyframe: false, isConfig: config)
                    #expect(p.accountedBytes == p.flvBodySize, "\(codec) config \(config)")
                }
            }
        }
        #expect(EncodedPacket.framingHeadroom >= FLVTagBody.avcHeaderSize)
        #expect(EncodedPacket.framingHeadroom >= FLVTagBody.opusHeaderSize)
    }

    /// The send queue hands out each packet with its headroom, and framing one packet in place
    /// leaves its neighbours' payloads whole.
    @Test func queuedPacketsFrameInPlaceWithoutTouchingTheirNeighbours() {
        let q = SendQueue(policy: CongestionPolicy(maxBytes: 4096).byteCapOnly)
        let a: [UInt8] = [1, 2, 3, 4], b: [UInt8] = [5, 6, 7, 8]
        a.withUnsafeBytes { _ = q.push(EncodedPacket(codec: .aac, data: $0, timestampMs: 0, isKeyframe: false)) }
        b.withUnsafeBytes { _ = q.push(EncodedPacket(codec: .h264, data: $0, timestampMs: 0, isKeyframe: true)) }
        var bodies: [[UInt8]] = []
        while q.withNext(deadlineNs: MediaTime.now(), { p in
            #expect(p.headroom == EncodedPacket.framingHeadroom)
            p.withFLVTag { (t) throws(Never) in bodies.append(Array(t.body)) }
        }) {}
        #expect(bodies == [[0xAF, 1] + a, [0x17, 1, 0, 0, 0] + b])
    }
}
