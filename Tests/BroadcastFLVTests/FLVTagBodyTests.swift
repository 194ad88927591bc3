import Testing
@testable import BroadcastFLV
import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// Expected bodies worked out by hand from FLV 10.1 Annex E.4.2/E.4.3 and E-RTMP v2.
@Suite(.timeLimit(.minutes(2))) struct FLVTagBodyTests {
    @Test func avcSequenceHeader() {
        let record = hex("01 64 00 1F FF E1 00 04 67 64 00 1F 01 00 04 68 EE 3C 80")
        let body = withBytes(record) { r in
            captureBytes(capacity: 64) { FLVTagBody.writeAVCSequenceHeader(configurationRecord: r, into: $0) }
        }
        #expect(body == hex("17 00 00 00 00") + record)
        #expect(FLVTagBody.avcBodySize(payloadCount: record.count) == 5 + 19)
    }

    @Test func avcKeyframeWithPositiveCompositionOffset() {
        let avcc = hex("00 00 00 02 65 88")
        let body = withBytes(avcc) { d in
            captureBytes(capacity: 64) { FLVTagBody.writeAVCFrame(d, compositionOffsetMs: 40, isKeyframe: true, into: $0) }
        }
        #expect(body == hex("17 01 00 00 28  00 00 00 02 65 88"))
    }

    @Test func avcInterFrameWithNegativeCompositionOffset() {
        let avcc = hex("00 00 00 01 41")
        let body = withBytes(avcc) { d in
            captureBytes(capacity: 64) { FLVTagBody.writeAVCFrame(d, compositionOffsetMs: -1, isKeyframe: false, into: $0) }
        }
        #expect(body == hex("27 01 FF FF FF  00 00 00 01 41"))
        let clamped = withBytes(avcc) { d in
            captureBytes(capacity: 64) { FLVTagBody.writeAVCFrame(d, compositionOffsetMs: 0x0100_0000, isKeyframe: false, into: $0) }
        }
        #expect(clamped == hex("27 01 7F FF FF  00 00 00 01 41"))
    }

    @Test func avcEndOfSequence() {
        #expect(captureBytes(capacity: 8) { FLVTagBody.writeAVCEndOfSequence(into: $0) } == hex("17 02 00 00 00"))
    }

    @Test func aacSequenceHeaderAndFrame() {
        // AudioSpecificConfig for AAC-LC, 48 kHz, stereo: 00010 0011 0010 000 = 11 90.
        let asc = hex("11 90")
        let header = withBytes(asc) { a in
            captureBytes(capacity: 16) { FLVTagBody.writeAudioSequenceHeader(codec: .aac, config: a, into: $0) }
        }
        #expect(header == hex("AF 00 11 90"))
        let frame = withBytes(hex("21 00 49")) { f in
            captureBytes(capacity: 16) { FLVTagBody.writeAACFrame(f, into: $0) }
        }
        #expect(frame == hex("AF 01 21 00 49"))
        #expect(FLVTagBody.audioBodySize(codec: .aac, payloadCount: 3) == 5)
    }

    @Test func opusSequenceStartAndCodedFrames() {
        // OpusHead: magic, version 1, 2 channels, pre-skip 312 LE, 48000 Hz LE, gain 0, family 0.
        let head = ascii("OpusHead") + hex("01 02 38 01 80 BB 00 00 00 00 00")
        let start = withBytes(head) { h in
            captureBytes(capacity: 64) { FLVTagBody.writeOpusSequenceStart(opusHead: h, into: $0) }
        }
        #expect(start == hex("90 4F 70 75 73  4F 70 75 73 48 65 61 64  01 02 38 01 80 BB 00 00 00 00 00"))
        let frame = withBytes(hex("FC FF FE")) { p in
            captureBytes(capacity: 64) { FLVTagBody.writeAudioFrame(codec: .opus, p, into: $0) }
        }
        #expect(frame == hex("91 4F 70 75 73 FC FF FE"))
        #expect(FLVTagBody.audioBodySize(codec: .opus, payloadCount: 3) == 8)
    }

    @Test func refusesTooSmallDestination() {
        let data = hex("00 00 00 02 65 88")
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: 10, alignment: 8)
        defer { buf.deallocate() }
        buf.initializeMemory(as: UInt8.self, repeating: 0xEE)
        let n = data.withUnsafeBytes { FLVTagBody.writeAVCFrame($0, compositionOffsetMs: 0, isKeyframe: true, into: buf) }
        #expect(n == nil)
        #expect(Array(buf) == [UInt8](repeating: 0xEE, count: 10))
        let m = data.withUnsafeBytes { FLVTagBody.writeOpusFrame($0, into: buf) }
        #expect(m == nil)
    }
}
