import Testing
@testable import BroadcastSRT
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

/// Collects the muxer's chunks.
private final class ChunkCollector: TSChunkOutput {
    var chunks: [[UInt8]] = []
    func sendChunk(_ chunk: UnsafeRawBufferPointer) throws(TransportError) { chunks.append(Array(chunk)) }
    var packets: [[UInt8]] {
        chunks.flatMap { c in stride(from: 0, to: c.count, by: 188).map { Array(c[$0..<$0 + 188]) } }
    }
}

/// A parsed TS packet: PID, flags, continuity, adaptation field and payload.
private struct Packet {
    var pid: Int, start: Bool, cc: Int, adaptation: [UInt8], payload: [UInt8]
    init(_ p: [UInt8]) {
        pid = Int(p[1] & 0x1F) << 8 | Int(p[2])
        start = p[1] & 0x40 != 0
        cc = Int(p[3] & 0x0F)
        let afc = (p[3] >> 4) & 3
        var at = 4
        adaptation = []
        if afc & 2 != 0 {
            let n = Int(p[4])
            adaptation = Array(p[5..<5 + n])
            at = 5 + n
        }
        payload = afc & 1 != 0 ? Array(p[at...]) : []
    }
    var pcrBase: Int64? {
        guard adaptation.count >= 7, adaptation[0] & 0x10 != 0 else { return nil }
        let a = adaptation.map(Int64.init)
        return a[1] << 25 | a[2] << 17 | a[3] << 9 | a[4] << 1 | a[5] >> 7
    }
}

private func tag(_ type: TrackKind, _ ms: UInt32, _ body: [UInt8], key: Bool = false, header: Bool = false,
                 into muxer: TSMuxer, _ out: ChunkCollector) throws {
    try body.withUnsafeBytes { b in
        try muxer.write(.fromFLVBody(type, timestampMs: ms, body: b, isKeyframe: key, isHeader: header), to: out)
    }
}

private let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1F, 0xDA]
private let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]
/// avcC with 4-byte NAL lengths, one SPS, one PPS.
private let avcC: [UInt8] = [1, 0x42, 0xC0, 0x1F, 0xFF, 0xE1, 0, UInt8(sps.count)] + sps + [1, 0, UInt8(pps.count)] + pps
private func avcFrame(key: Bool, nals: [[UInt8]], cts: UInt8 = 0) -> [UInt8] {
    var b: [UInt8] = [key ? 0x17 : 0x27, 1, 0, 0, cts]
    for n in nals { b += [0, 0, UInt8(n.count >> 8), UInt8(n.count & 0xFF)] + n }
    return b
}

/// The elementary-stream bytes of every PES on `pid`, each with its PTS (90 kHz) and PES header.
private func pes(_ packets: [Packet], pid: Int) -> [(header: [UInt8], pts: Int64, es: [UInt8])] {
    var out: [[UInt8]] = []
    for p in packets where p.pid == pid {
        if p.start { out.append(p.payload) } else if !out.isEmpty { out[out.count - 1] += p.payload }
    }
    return out.map { b in
        let headerLength = 9 + Int(b[8])
        let t = b[9...].prefix(5).map(Int64.init)
        let pts = (t[0] >> 1 & 7) << 30 | t[1] << 22 | (t[2] >> 1) << 15 | t[3] << 7 | t[4] >> 1
        return (Array(b[..<headerLength]), pts, Array(b[headerLength...]))
    }
}

@Suite("MPEG-TS muxer", .timeLimit(.minutes(1)))
struct TSMuxerTests {
    @Test func crcMatchesTheMPEG2CheckValue() {
        let v = Array("123456789".utf8).withUnsafeBytes { TSCRC32.checksum($0) }
        #expect(v == 0x0376_E6E7)
    }

    @Test func h264AndAACStreamIsWellFormed() throws {
        let m = TSMuxer(layout: TSStreamLayout(hasVideo: true, audioCodec: .aac))
        let out = ChunkCollector()
        try tag(.video, 0, [0x17, 0, 0, 0, 0] + avcC, header: true, into: m, out)
        try tag(.audio, 0, [0xAF, 0, 0x11, 0x90], header: true, into: m, out)   // AAC-LC 48 kHz stereo
        #expect(out.chunks.isEmpty, "codec headers alone send nothing")
        let big = [UInt8](repeating: 0x5A, count: 3000)
        try tag(.video, 0, avcFrame(key: true, nals: [[0x65] + big]), key: true, into: m, out)
        try tag(.audio, 21, [0xAF, 1] + [UInt8](repeating: 0x21, count: 300), into: m, out)
        try tag(.video, 33, avcFrame(key: false, nals: [[0x41, 1, 2, 3], [0x41, 4, 5]], cts: 0), into: m, out)

        for c in out.chunks {
            #expect(c.count % 188 == 0 && c.count <= 1316 && !c.isEmpty)
        }
        let packets = out.packets.map(Packet.init)
        #expect(out.packets.allSatisfy { $0[0] == 0x47 })
        #expect(packets[0].pid == 0 && packets[1].pid == 0x1000, "PAT then PMT lead the stream")
        // Continuity counters: +1 per packet, per PID.
        var last: [Int: Int] = [:]
        for p in packets {
            if let l = last[p.pid] { #expect(p.cc == (l + 1) & 15, "PID \(p.pid)") }
            last[p.pid] = p.cc
        }
        // PAT: one program → PMT PID, valid CRC.
        let pat = packets[0].payload
        let patLength = Int(pat[2] & 0x0F) << 8 | Int(pat[3])
        let patCRC = Array(pat[1..<1 + 3 + patLength]).withUnsafeBytes { TSCRC32.checksum($0) }
        #expect(patCRC == 0, "CRC over a section including its CRC is 0")
        #expect(Int(pat[11] & 0x1F) << 8 | Int(pat[12]) == 0x1000)
        // PMT: PCR on video, H.264 and ADTS streams.
        let pmt = packets[1].payload
        #expect(Int(pmt[9] & 0x1F) << 8 | Int(pmt[10]) == 0x100)
        #expect(pmt[13] == 0x1B && pmt[18] == 0x0F)

        let video = pes(packets, pid: 0x100)
        #expect(video.count == 2)
        #expect(Array(video[0].header.prefix(4)) == [0, 0, 1, 0xE0])
        #expect(video[0].pts == TSMuxer.ptsLeadMs * 90)
        #expect(video[1].pts == (33 + TSMuxer.ptsLeadMs) * 90)
        let aud: [UInt8] = [0, 0, 0, 1, 9, 0xF0]
        #expect(video[0].es == aud + [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps + [0, 0, 0, 1, 0x65] + big,
                "the IDR carries AUD, SPS, PPS, then its NAL in Annex B")
        #expect(video[1].es == aud + [0, 0, 0, 1, 0x41, 1, 2, 3, 0, 0, 0, 1, 0x41, 4, 5], "no SPS/PPS before a P frame")
        // The keyframe's first packet: random access + PCR = DTS (PTS leads it).
        let first = packets.first { $0.pid == 0x100 && $0.start }!
        #expect(first.adaptation[0] & 0x40 != 0)
        #expect(first.pcrBase == 0)
        let second = packets.last { $0.pid == 0x100 && $0.start }!
        let secondPCR: Int64 = try #require(second.pcrBase)
        #expect(secondPCR == Int64(33 * 90))

        let audio = pes(packets, pid: 0x101)
        #expect(audio.count == 1)
        let a = audio[0]
        #expect(a.header[3] == 0xC0)
        #expect(Int(a.header[4]) << 8 | Int(a.header[5]) == 3 + 5 + 7 + 300, "PES_packet_length")
        #expect(a.es[0] == 0xFF && a.es[1] == 0xF1)
        let frameLength = Int(a.es[3] & 3) << 11 | Int(a.es[4]) << 3 | Int(a.es[5]) >> 5
        #expect(frameLength == 307)
        #expect((a.es[2] >> 6) == 1 && (a.es[2] >> 2) & 0xF == 3, "AAC-LC, 48 kHz")
        #expect(a.es.count == 307)
    }

    @Test func opusCarriesItsDescriptorsAndControlHeader() throws {
        let m = TSMuxer(layout: TSStreamLayout(hasVideo: false, audioCodec: .opus, audioChannels: 2))
        let out = ChunkCollector()
        try tag(.audio, 0, [0x90, 0x4F, 0x70, 0x75, 0x73] + [UInt8](repeating: 1, count: 19), header: true, into: m, out)
        try tag(.audio, 20, [0x91, 0x4F, 0x70, 0x75, 0x73] + [UInt8](repeating: 7, count: 300), into: m, out)
        let packets = out.packets.map(Packet.init)
        let pmt = packets.first { $0.pid == 0x1000 }!.payload
        #expect(Int(pmt[9] & 0x1F) << 8 | Int(pmt[10]) == 0x101, "PCR on audio without video")
        #expect(pmt[13] == 0x06)
        #expect(Array(pmt[18..<28]) == [0x05, 4, 0x4F, 0x70, 0x75, 0x73, 0x7F, 2, 0x80, 2])
        let a = pes(packets, pid: 0x101)
        #expect(a.count == 1)
        #expect(a[0].header[3] == 0xBD)
        #expect(Array(a[0].es.prefix(4)) == [0x7F, 0xE0, 0xFF, 45], "control header: 300 = 255 + 45")
        #expect(a[0].es.count == 4 + 300)
    }

    @Test func malformedNALLengthIsCountedNotSent() throws {
        let m = TSMuxer(layout: TSStreamLayout(hasVideo: true, audioCodec: nil))
        let out = ChunkCollector()
        try tag(.video, 0, [0x17, 1, 0, 0, 0, 0, 0, 0x10, 0, 0x65], key: true, into: m, out)
        #expect(m.droppedUnits == 1)
        #expect(out.chunks.isEmpty)
    }

    @Test(.enabled(if: AllocationCounter.isLoaded, "needs tools/allocshim preloaded (scripts/test does it)")) func steadyStateMuxingDoesNotAllocate() throws {
        let m = TSMuxer(layout: TSStreamLayout(hasVideo: true, audioCodec: .aac))
        final class Discard: TSChunkOutput { var bytes = 0; func sendChunk(_ c: UnsafeRawBufferPointer) throws(TransportError) { bytes += c.count } }
        let out = Discard()
        let header = [0x17, 0, 0, 0, 0] + avcC, asc: [UInt8] = [0xAF, 0, 0x11, 0x90]
        let key = avcFrame(key: true, nals: [[0x65] + [UInt8](repeating: 3, count: 20000)])
        let p = avcFrame(key: false, nals: [[0x41] + [UInt8](repeating: 4, count: 4000)])
        let aac = [0xAF, 1] + [UInt8](repeating: 5, count: 350)
        func write(_ type: TrackKind, _ ms: UInt32, _ b: [UInt8], key: Bool = false) throws {
            try b.withUnsafeBytes { try m.write(.fromFLVBody(type, timestampMs: ms, body: $0, isKeyframe: key), to: out) }
        }
        try write(.video, 0, header)
        try write(.audio, 0, asc)
        try write(.video, 0, key, key: true)
        let before = AllocationCounter.thisThread()
        for i in 1...120 {
            try write(.video, UInt32(i * 33), i % 60 == 0 ? key : p, key: i % 60 == 0)
            try write(.audio, UInt32(i * 21), aac)
        }
        #expect(AllocationCounter.thisThread() - before == 0)
        #expect(out.bytes > 120 * 4000)
    }
}
