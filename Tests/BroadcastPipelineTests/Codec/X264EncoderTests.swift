import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// An owned I420 picture for tests, filled with a flat pattern or deterministic noise.
final class CodecTestPicture {
    let width: Int, height: Int
    let bytes: UnsafeMutableRawBufferPointer
    private var seed: UInt64 = 0x9E37_79B9_7F4A_7C15

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        bytes = .allocate(byteCount: I420Frame.byteCount(width: width, height: height), alignment: 64)
        bytes.initializeMemory(as: UInt8.self, repeating: 128)
    }
    deinit { bytes.deallocate() }

    func fillNoise() {
        for i in 0..<bytes.count {
            seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17
            bytes[i] = UInt8(truncatingIfNeeded: seed)
        }
    }

    var frame: I420Frame {
        let base = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        return I420Frame(width: width, height: height, y: base, u: base + width * height,
                         v: base + width * height + cw * ch, strideY: width, strideUV: cw)
    }
}

struct CodecCapturedPacket {
    var bytes: [UInt8]
    var timestampMs: Int64
    var compositionOffsetMs: Int32
    var isKeyframe: Bool
    init(_ p: EncodedPacket) {
        bytes = Array(p.data); timestampMs = p.timestampMs
        compositionOffsetMs = p.compositionOffsetMs; isKeyframe = p.isKeyframe
    }
    /// NAL unit types found by walking the 4-byte AVCC lengths; nil if the framing is broken.
    var nalTypes: [UInt8]? {
        var types: [UInt8] = [], at = 0
        while at + 4 <= bytes.count {
            let len = Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            guard len > 0, at + 4 + len <= bytes.count else { return nil }
            types.append(bytes[at + 4] & 0x1F)
            at += 4 + len
        }
        return at == bytes.count ? types : nil
    }
}

func codecTestSettings(fps: Int = 10, bitrate: Int = 500) -> VideoEncoderSettings {
    VideoEncoderSettings(width: 320, height: 240, fps: fps, bitrateKbps: bitrate, keyframeIntervalSeconds: 1,
                         preset: "ultrafast", threads: 1)
}

@Suite(.timeLimit(.minutes(5))) struct X264EncoderTests {
    @Test func idrEveryKeyintWithoutReordering() throws {
        let enc = try X264Encoder(settings: codecTestSettings())
        let pic = CodecTestPicture(width: 320, height: 240)
        var packets: [CodecCapturedPacket] = []
        for i in 0..<35 {
            pic.fillNoise()
            #expect(enc.encode(pic.frame, timestampMs: Int64(i * 100), forceKeyframe: false) { packets.append(.init($0)) })
        }
        enc.flush { packets.append(.init($0)) }
        #expect(packets.count == 35)
        #expect(packets.indices.filter { packets[$0].isKeyframe } == [0, 10, 20, 30])
        #expect(packets.allSatisfy { $0.compositionOffsetMs == 0 })
        let expectedTimes: [Int64] = (0..<35).map { (i: Int) -> Int64 in Int64(i * 100) }
        #expect(packets.map(\.timestampMs) == expectedTimes)
        for (i, p) in packets.enumerated() {
            let types = try #require(p.nalTypes, "packet \(i) is not AVCC-framed")
            // No SPS/PPS in band (b_repeat_headers = 0); IDR slices exactly on keyframes.
            #expect(!types.contains(7) && !types.contains(8))
            #expect(types.contains(5) == p.isKeyframe)
            #expect(types.contains(1) == !p.isKeyframe)
        }
    }

    @Test func ultrafastSignalsBaselineWithoutChromaExtension() throws {
        let enc = try X264Encoder(settings: codecTestSettings())
        let r = Array(enc.decoderConfigurationRecord)
        let spsLen = Int(r[6]) << 8 | Int(r[7])
        let ppsLen = Int(r[9 + spsLen]) << 8 | Int(r[10 + spsLen])
        #expect(r[1] == 66)
        #expect(r.count == 11 + spsLen + ppsLen)
    }

    @Test func forcedKeyframeIsHonoured() throws {
        let enc = try X264Encoder(settings: codecTestSettings())
        let pic = CodecTestPicture(width: 320, height: 240)
        var keyframes: [Int] = []
        for i in 0..<8 {
            pic.fillNoise()
            _ = enc.encode(pic.frame, timestampMs: Int64(i * 100), forceKeyframe: i == 4) {
                if $0.isKeyframe { keyframes.append(i) }
            }
        }
        #expect(keyframes == [0, 4])
    }

    @Test func avcCRecordParses() throws {
        // ultrafast drops CABAC and 8x8 transforms, so x264 would signal Baseline; veryfast needs High.
        var s = codecTestSettings()
        s.preset = "veryfast"
        let enc = try X264Encoder(settings: s)
        let r = Array(enc.decoderConfigurationRecord)
        try #require(r.count > 11)
        #expect(r[0] == 1)                         // configurationVersion
        #expect(r[4] == 0xFF)                      // reserved bits + lengthSizeMinusOne = 3
        #expect(r[5] == 0xE1)                      // reserved bits + one SPS
        let spsLen = Int(r[6]) << 8 | Int(r[7])
        let sps = Array(r[8..<(8 + spsLen)])
        #expect(sps[0] & 0x1F == 7)
        #expect(Array(r[1...3]) == Array(sps[1...3]))  // profile, compatibility, level copied from the SPS
        #expect(sps[1] == 100)                     // profile "high"
        var at = 8 + spsLen
        #expect(r[at] == 1)                        // one PPS
        let ppsLen = Int(r[at + 1]) << 8 | Int(r[at + 2])
        #expect(r[at + 3] & 0x1F == 8)
        at += 3 + ppsLen
        // High profile extension: 4:2:0, 8-bit luma and chroma, no SPS extensions.
        #expect(Array(r[at...]) == [0xFD, 0xF8, 0xF8, 0x00])
    }

    /// Reads the PPS of an avcC record: entropy_coding_mode_flag and transform_8x8_mode_flag.
    static func ppsFlags(_ r: [UInt8]) throws -> (cabac: Bool, transform8x8: Bool) {
        let spsLen = Int(r[6]) << 8 | Int(r[7])
        let ppsLen = Int(r[9 + spsLen]) << 8 | Int(r[10 + spsLen])
        // Emulation-prevention bytes removed before the bit reader.
        var rbsp: [UInt8] = []
        for b in r[(12 + spsLen)..<(11 + spsLen + ppsLen)] {
            if b == 3 && rbsp.count >= 2 && rbsp[rbsp.count - 1] == 0 && rbsp[rbsp.count - 2] == 0 { continue }
            rbsp.append(b)
        }
        var bit = 0
        func u(_ n: Int) -> Int { var v = 0; for _ in 0..<n { v = v << 1 | Int(rbsp[bit >> 3] >> (7 - UInt8(bit & 7)) & 1); bit += 1 }; return v }
        func ue() -> Int { var zeros = 0; while u(1) == 0 { zeros += 1 }; return (1 << zeros) - 1 + u(zeros) }
        func se() -> Int { let k = ue(); return k & 1 == 1 ? (k + 1) / 2 : -(k / 2) }
        _ = ue(); _ = ue()                      // pps id, sps id
        let cabac = u(1) == 1
        _ = u(1)                                // bottom_field_pic_order_in_frame_present
        #expect(ue() == 0)                      // one slice group
        _ = ue(); _ = ue(); _ = u(1); _ = u(2)  // ref idx counts, weighted_pred, weighted_bipred
        _ = se(); _ = se(); _ = se()            // qp, qs, chroma qp offset
        _ = u(1); _ = u(1); _ = u(1)            // deblocking control, constrained intra, redundant pic cnt
        // more_rbsp_data(): anything before the rbsp stop bit (the last 1 bit) is the High extension.
        let last = rbsp.count - 1
        let stopBit = last * 8 + 7 - rbsp[last].trailingZeroBitCount
        let transform8x8 = bit < stopBit ? u(1) == 1 : false
        return (cabac, transform8x8)
    }

    /// Issue 23: x264 touches its weighted plane only at the first weighted frame (a fade), a
    /// late VmHWM step; the library opens every preset without weighted prediction unless a
    /// tuning asks for it.
    @Test func weightedPredictionIsOffUnlessATuningAsksForIt() throws {
        var s = codecTestSettings()
        s.preset = "veryfast"                    // its preset default is weightp 1
        #expect(try X264Encoder(settings: s).effectiveTools.weightedPrediction == 0)
        #expect(s.weightedPrediction == 0)
        s.tuning = X264Tuning(weightedPrediction: 2)
        #expect(try X264Encoder(settings: s).effectiveTools.weightedPrediction == 2)
        #expect(s.weightedPrediction == 2)
    }

    @Test func leanTuningOpensWithTheFreeToolsAndNoSubpel() throws {
        var s = codecTestSettings()
        s.preset = "veryfast"
        s.tuning = .lean
        let enc = try X264Encoder(settings: s)
        let t = enc.effectiveTools
        #expect(t.subpelRefinement == 0 && t.weightedPrediction == 0)
        #expect(t.cabac == true && t.deblock == true && t.transform8x8 == true && t.intraPartitions == true)
        #expect(t.adaptiveQuantization == 1)
        #expect(t.trellis == 1)                 // veryfast has none; lean adds it (CPU, no memory)
        #expect(t.motionSearch == .hexagon)     // veryfast's search, untouched by the tuning
        let flags = try Self.ppsFlags(Array(enc.decoderConfigurationRecord))
        #expect(flags.cabac && flags.transform8x8)
        #expect(enc.decoderConfigurationRecord[1] == 100)   // High profile

        let pic = CodecTestPicture(width: 320, height: 240)
        var packets: [CodecCapturedPacket] = []
        for i in 0..<15 {
            pic.fillNoise()
            #expect(enc.encode(pic.frame, timestampMs: Int64(i * 100), forceKeyframe: false) { packets.append(.init($0)) })
        }
        #expect(packets.count == 15 && packets[0].isKeyframe)
        #expect(packets.allSatisfy { $0.nalTypes != nil })
    }

    @Test func leanTuningOnUltrafastTurnsTheToolsOn() throws {
        var s = codecTestSettings()
        let ultrafast = try X264Encoder(settings: s)   // kept alive: the record is its memory
        let plain = try Self.ppsFlags(Array(ultrafast.decoderConfigurationRecord))
        #expect(!plain.cabac && !plain.transform8x8)
        withExtendedLifetime(ultrafast) {}
        s.tuning = .lean
        let enc = try X264Encoder(settings: s)
        let flags = try Self.ppsFlags(Array(enc.decoderConfigurationRecord))
        #expect(flags.cabac && flags.transform8x8)
        #expect(enc.effectiveTools.deblock == true && enc.effectiveTools.adaptiveQuantization == 1)
        #expect(enc.effectiveTools.motionSearch == .diamond)
    }

    @Test func baselineProfileStillWinsOverTheTuning() throws {
        var s = codecTestSettings()
        s.tuning = .lean
        s.profile = "baseline"
        let enc = try X264Encoder(settings: s)
        #expect(enc.effectiveTools.cabac == false && enc.effectiveTools.transform8x8 == false)
    }

    @Test func requestBitrateLowersOutput() throws {
        let enc = try X264Encoder(settings: codecTestSettings(bitrate: 1000))
        let pic = CodecTestPicture(width: 320, height: 240)
        var sizes: [Int] = []
        for i in 0..<60 {
            if i == 30 { enc.requestBitrate(kbps: 150) }
            pic.fillNoise()
            _ = enc.encode(pic.frame, timestampMs: Int64(i * 100), forceKeyframe: false) { sizes.append($0.data.count) }
        }
        #expect(sizes.count == 60)
        // Skip the IDRs (frames 0, 10, ...) and the settling frames right after the change.
        let before = (11..<30).filter { $0 % 10 != 0 }.map { sizes[$0] }
        let after = (41..<60).filter { $0 % 10 != 0 }.map { sizes[$0] }
        let avgBefore = before.reduce(0, +) / before.count, avgAfter = after.reduce(0, +) / after.count
        #expect(avgAfter * 3 < avgBefore, "average P-frame \(avgBefore) B before, \(avgAfter) B after")
        #expect(enc.lastAppliedBitrateKbps == 150)
    }

    @Test func flushDrainsDelayedFrames() throws {
        // Frame threads without zerolatency hold frames back, so flush has real work to do.
        var s = codecTestSettings()
        s.tune = ""
        s.threads = 2
        s.slicedThreads = false
        let enc = try X264Encoder(settings: s)
        let pic = CodecTestPicture(width: 320, height: 240)
        var duringEncode = 0, duringFlush = 0
        for i in 0..<12 {
            pic.fillNoise()
            _ = enc.encode(pic.frame, timestampMs: Int64(i * 100), forceKeyframe: false) { _ in duringEncode += 1 }
        }
        var lastTimestamp: Int64 = -1
        enc.flush { duringFlush += 1; lastTimestamp = $0.timestampMs }
        #expect(duringFlush > 0)
        #expect(duringEncode + duringFlush == 12)
        #expect(lastTimestamp == 1100)
    }

    @Test func wrongPictureSizeIsRefused() throws {
        let enc = try X264Encoder(settings: codecTestSettings())
        let pic = CodecTestPicture(width: 160, height: 120)
        #expect(!enc.encode(pic.frame, timestampMs: 0, forceKeyframe: false) { _ in })
    }

    @Test(arguments: [
        (VideoEncoderSettings(width: 0, height: 240), "0x240"),
        (VideoEncoderSettings(width: 321, height: 240), "even"),
        (VideoEncoderSettings(width: 320, height: 240, preset: "warp"), "warp"),
        (VideoEncoderSettings(width: 320, height: 240, tune: "nonsense"), "nonsense"),
        (VideoEncoderSettings(width: 320, height: 240, profile: "extreme"), "extreme"),
        (VideoEncoderSettings(width: 320, height: 240, fps: 0), "fps"),
        (VideoEncoderSettings(width: 320, height: 240, bitrateKbps: 0), "bitrate"),
        (VideoEncoderSettings(width: 320, height: 240, tuning: X264Tuning(subpelRefinement: 12)), "subme"),
    ])
    func invalidSettingsThrow(settings: VideoEncoderSettings, mentions: String) {
        do {
            _ = try X264Encoder(settings: settings)
            Issue.record("expected \(settings) to be rejected")
        } catch {
            guard case .invalidSettings(let why) = error else { Issue.record("wrong error \(error)"); return }
            #expect(why.contains(mentions), "\(why)")
        }
    }
}
