import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(2))) struct AVCDecoderConfigurationRecordTests {
    @Test func baselineRecordHasNoChromaExtension() throws {
        let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1E, 0xDA, 0x02, 0x80]
        let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
        defer { out.deallocate() }
        let n = try sps.withUnsafeBytes { s in try pps.withUnsafeBytes { p in
            #expect(AVCDecoderConfigurationRecord.byteCount(sps: s, pps: p) == 22)
            return try AVCDecoderConfigurationRecord.write(sps: s, pps: p, into: out)
        } }
        var expected: [UInt8] = [0x01, 0x42, 0xC0, 0x1E, 0xFF, 0xE1, 0x00, 0x07]
        expected += sps
        expected += [0x01, 0x00, 0x04]
        expected += pps
        #expect(Array(out[0..<n]) == expected)
    }

    @Test func highProfileChromaFieldsAreReadFromTheSPS() throws {
        // High 4:2:2 (profile 122): sps_id ue=0 '1', chroma_format_idc ue=2 '011', luma depth-8 ue=2 '011', chroma depth-8 ue=0 '1'
        // -> bits 1 011 011 1 = 0xB7, then padding.
        let sps: [UInt8] = [0x67, 122, 0x00, 0x1F, 0xB7, 0x80]
        let pps: [UInt8] = [0x68, 0xEB]
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
        defer { out.deallocate() }
        let n = try sps.withUnsafeBytes { s in try pps.withUnsafeBytes { p in
            try AVCDecoderConfigurationRecord.write(sps: s, pps: p, into: out)
        } }
        let tail: [UInt8] = [0xFE, 0xFA, 0xF8, 0x00]  // 0xFC|2, 0xF8|2, 0xF8|0, no SPS extensions
        #expect(Array(out[(n - 4)..<n]) == tail)
    }

    @Test func emulationPreventionBytesAreSkipped() {
        // 00 00 03 01 A5: the 03 is an emulation-prevention byte, so the RBSP is 00 00 01 A5.
        let nal: [UInt8] = [0x00, 0x00, 0x03, 0x01, 0xA5]
        nal.withUnsafeBytes { b in
            var r = RBSPBitReader(b, startByte: 0)
            var value: UInt32 = 0
            for _ in 0..<32 { value = value << 1 | r.bit() }
            #expect(value == 0x0000_01A5)
            #expect(!r.overrun)
            _ = r.bit()
            #expect(r.overrun)
        }
    }

    @Test func nonSPSIsRejected() {
        let bogus: [UInt8] = [0x68, 0x42, 0x00, 0x1E]
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
        defer { out.deallocate() }
        _ = bogus.withUnsafeBytes { s in
            #expect(throws: EncoderError.self) { try AVCDecoderConfigurationRecord.write(sps: s, pps: s, into: out) }
        }
    }
}
