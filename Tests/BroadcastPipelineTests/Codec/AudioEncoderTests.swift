import COpus
import Glibc
import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// Interleaved stereo sine at 48 kHz, `frames` frames long, starting at frame `start`.
func codecStereoSine(frames: Int, start: Int = 0, hz: Float = 1000, amplitude: Float = 0.5) -> [Float] {
    var out = [Float](repeating: 0, count: frames * 2)
    for i in 0..<frames {
        let v = amplitude * sinf(2 * .pi * hz * Float(start + i) / 48_000)
        out[2 * i] = v
        out[2 * i + 1] = v
    }
    return out
}

@Suite(.timeLimit(.minutes(2))) struct AACEncoderTests {
    @Test func audioSpecificConfigMatchesHandComputedBytes() throws {
        // AAC-LC (00010) | 48 kHz index 3 (0011) | 2 channels (0010) | 000 -> 0001 0001 1001 0000.
        let enc = try AACEncoder(settings: .init(codec: .aac))
        let stereo48k: [UInt8] = [0x11, 0x90]
        #expect(Array(enc.sequenceHeader) == stereo48k)
        // 44.1 kHz (index 4) mono: 00010 0100 0001 000 -> 0x12 0x08.
        let mono = try AACEncoder(settings: .init(codec: .aac, bitrateKbps: 64, sampleRate: 44_100, channels: 1))
        let mono44k: [UInt8] = [0x12, 0x08]
        #expect(Array(mono.sequenceHeader) == mono44k)
    }

    @Test func eachFrameYieldsOneRawAccessUnit() throws {
        let enc = try AACEncoder(settings: .init(codec: .aac))
        #expect(enc.frameSize == 1024)
        var packets: [(bytes: [UInt8], ts: Int64, key: Bool)] = []
        for n in 0..<10 {
            let pcm = codecStereoSine(frames: 1024, start: n * 1024)
            let ok = pcm.withUnsafeBufferPointer { p in
                enc.encode(p.baseAddress!, timestampMs: Int64(n * 1024 * 1000 / 48_000)) {
                    packets.append((Array($0.data), $0.timestampMs, $0.isKeyframe))
                }
            }
            #expect(ok)
        }
        #expect(packets.count == 10)
        for p in packets {
            #expect(p.bytes.count > 8 && p.bytes.count <= 1536)
            // No ADTS syncword; a stereo raw_data_block opens with a CPE element (id_syn_ele = 1).
            #expect(!(p.bytes[0] == 0xFF && p.bytes[1] & 0xF0 == 0xF0))
            #expect(p.bytes[0] >> 5 == 1)
            #expect(p.key)
        }
        let expectedTimes: [Int64] = (0..<10).map { (n: Int) -> Int64 in Int64(n * 1024 * 1000 / 48_000) }
        #expect(packets.map(\.ts) == expectedTimes)
        // delaySamples is not checked against a copied number here: test_codec_delay.py decodes a
        // click with FFmpeg (PyAV) and requires it to play within 2 ms of its capture time.
    }

    @Test func invalidSettingsThrow() {
        #expect(throws: EncoderError.self) { try AACEncoder(settings: .init(codec: .aac, sampleRate: 12_345)) }
        #expect(throws: EncoderError.self) { try AACEncoder(settings: .init(codec: .aac, channels: 6)) }
        #expect(throws: EncoderError.self) { try AACEncoder(settings: .init(codec: .opus)) }
    }
}

@Suite(.timeLimit(.minutes(2))) struct OpusEncoderTests {
    @Test func opusHeadMatchesHandWorkedBytes() {
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: OpusHead.byteCount, alignment: 1)
        defer { out.deallocate() }
        OpusHead.write(channels: 2, preSkip: 312, inputSampleRate: 48_000, into: out)
        // 'OpusHead', version 1, 2 channels, pre-skip 312 = 0x0138 LE, 48000 = 0x0000BB80 LE, gain 0, family 0.
        let expected: [UInt8] = [0x4F, 0x70, 0x75, 0x73, 0x48, 0x65, 0x61, 0x64, 0x01, 0x02, 0x38, 0x01,
                                 0x80, 0xBB, 0x00, 0x00, 0x00, 0x00, 0x00]
        #expect(Array(out) == expected)
    }

    @Test func sequenceHeaderCarriesTheEncoderLookahead() throws {
        let enc = try BroadcastPipeline.OpusEncoder(settings: .init(codec: .opus))
        let head = Array(enc.sequenceHeader)
        #expect(head.count == 19)
        #expect(Array(head[0..<8]) == Array("OpusHead".utf8))
        #expect(Int(head[10]) | Int(head[11]) << 8 == enc.preSkip)
        #expect(enc.preSkip > 0 && enc.preSkip < 960)
        // FLV via FFmpeg plays the pre-skip (no start trim), so tags shift by it (measured by avsync).
        #expect(enc.delaySamples == enc.preSkip)
    }

    @Test func packetsDecodeTo960SamplesWithLibopus() throws {
        let enc = try BroadcastPipeline.OpusEncoder(settings: .init(codec: .opus, bitrateKbps: 96))
        #expect(enc.frameSize == 960)
        var error: Int32 = 0
        let dec = try #require(opus_decoder_create(48_000, 2, &error))
        defer { opus_decoder_destroy(dec) }
        var decoded = [Float](repeating: 0, count: 960 * 2)
        var energy: Float = 0
        var packets = 0
        for n in 0..<25 {
            let pcm = codecStereoSine(frames: 960, start: n * 960)
            _ = pcm.withUnsafeBufferPointer { p in
                enc.encode(p.baseAddress!, timestampMs: Int64(n * 20)) { pkt in
                    packets += 1
                    #expect(pkt.timestampMs == Int64(n * 20))
                    let samples = decoded.withUnsafeMutableBufferPointer { d in
                        opus_decode_float(dec, pkt.data.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                          Int32(pkt.data.count), d.baseAddress!, 960, 0)
                    }
                    #expect(samples == 960)
                    if n >= 5 { energy += decoded.reduce(0) { $0 + $1 * $1 } }
                }
            }
        }
        #expect(packets == 25)
        // A 0.5-amplitude sine has mean square 0.125; the decoded tone must come back near that.
        let meanSquare = energy / Float(20 * 960 * 2)
        #expect(abs(meanSquare - 0.125) < 0.02, "mean square \(meanSquare)")
    }

    @Test func invalidSettingsThrow() {
        #expect(throws: EncoderError.invalidSettings("Opus sample rate 44100 not 48000")) {
            try BroadcastPipeline.OpusEncoder(settings: .init(codec: .opus, sampleRate: 44_100))
        }
        #expect(throws: EncoderError.self) { try BroadcastPipeline.OpusEncoder(settings: .init(codec: .aac)) }
    }
}
