import Foundation
import Testing
@testable import BroadcastRTMP
import BroadcastCore
import BroadcastPipeline
import BroadcastFLV
import BroadcastNetwork
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(5)), .serialized) struct RTMPPublisherTests {
    static let key = "test-SECRET-key"

    @Test func publishesToNginxAndRecordingMatches() throws {
        let work = try TestMedia.scratchDirectory("pub")
        defer { try? FileManager.default.removeItem(at: work) }
        let source = try TestMedia.makeSourceFLV(in: work)
        let tags = TestMedia.parseFLV(try TestMedia.readFile(source))
        let expected = try #require(try TestMedia.probe(source))

        let nginx = try NginxFixture(port: NginxFixture.freePort(offset: 0))
        defer { nginx.stop(); nginx.removeFiles() }
        let publisher = RTMPPublisher(url: "rtmp://127.0.0.1:\(nginx.port)/live", streamKey: Self.key)
        #expect(publisher.displayName == "rtmp://127.0.0.1:\(nginx.port)/live/****")
        try publisher.open()
        try TestMedia.send(tags, to: publisher)
        // Every tag but ffmpeg's closing AVC end of sequence, which carries no packet (TestMedia.send).
        let mediaBytes = tags.filter { !($0.type == 9 && $0.body[1] == 2) }
            .reduce(0) { $0 + $1.body.count + ($1.type == 18 ? 16 : 0) }
        #expect(publisher.bytesSent == mediaBytes)
        #expect(publisher.lastWriteMonotonicNs > 0)
        publisher.close()
        publisher.close() // idempotent
        usleep(300_000)
        nginx.stop()

        let recording = nginx.recording(Self.key)
        let probed = try #require(try TestMedia.probe(recording), "nginx log: \(nginx.errorLog)")
        #expect(probed == expected)
        // nginx-rtmp records message bodies verbatim: every audio/video frame arrives
        // byte-identical (it may repeat sequence headers, so those are compared as a set).
        let recorded = TestMedia.parseFLV(try TestMedia.readFile(recording)).filter { $0.type != 18 }
        let sent = tags.filter { $0.type != 18 }
        func frames(_ t: [ParsedTag]) -> [ParsedTag] { t.filter { $0.body.count > 1 && $0.body[1] == 1 } }
        func headers(_ t: [ParsedTag]) -> Set<[UInt8]> { Set(t.filter { $0.body.count > 1 && $0.body[1] == 0 }.map(\.body)) }
        #expect(frames(recorded).map(\.body) == frames(sent).map(\.body))
        #expect(frames(recorded).map(\.timestampMs) == frames(sent).map(\.timestampMs))
        #expect(headers(recorded) == headers(sent))
        #expect(frames(sent).count == 10 + expected["aac", default: 0])
    }

    /// A 700 KB frame goes past the initial 512 KB packet buffer and through 4096-byte chunks.
    @Test func largeFrameArrivesIntact() throws {
        let nginx = try NginxFixture(port: NginxFixture.freePort(offset: 1), logLevel: "debug")
        defer { nginx.stop(); nginx.removeFiles() }
        let publisher = RTMPPublisher(url: "rtmp://127.0.0.1:\(nginx.port)/live/", streamKey: "big")
        try publisher.open()
        let record = hex("01 64 00 0C FF E1 00 04 67 64 00 0C 01 00 04 68 EE 3C 80")
        var header = [UInt8](repeating: 0, count: 64)
        let headerSize = header.withUnsafeMutableBytes { dst in
            record.withUnsafeBytes { FLVTagBody.writeAVCSequenceHeader(configurationRecord: $0, into: dst) }
        }!
        header.removeLast(64 - headerSize)
        let naluSize = 700_000
        var avcc = [UInt8](repeating: 0, count: 4 + naluSize)
        avcc[0] = UInt8(naluSize >> 24); avcc[1] = UInt8((naluSize >> 16) & 0xFF)
        avcc[2] = UInt8((naluSize >> 8) & 0xFF); avcc[3] = UInt8(naluSize & 0xFF)
        avcc[4] = 0x0C // filler NAL
        for i in 5..<avcc.count { avcc[i] = UInt8(truncatingIfNeeded: i &* 31) }
        var frame = [UInt8](repeating: 0, count: avcc.count + 5)
        _ = frame.withUnsafeMutableBytes { dst in
            avcc.withUnsafeBytes { FLVTagBody.writeAVCFrame($0, compositionOffsetMs: 0, isKeyframe: true, into: dst) }
        }
        try header.withUnsafeBytes { try publisher.write(FLVTag(type: .video, timestampMs: 0, body: $0, isHeader: true)) }
        try frame.withUnsafeBytes { try publisher.write(FLVTag(type: .video, timestampMs: 0, body: $0, isKeyframe: true)) }
        try frame.withUnsafeBytes { try publisher.write(FLVTag(type: .video, timestampMs: 100, body: $0, isKeyframe: true)) }
        publisher.close()
        usleep(300_000)
        nginx.stop()
        let recorded = TestMedia.parseFLV(try TestMedia.readFile(nginx.recording("big")))
        #expect(recorded.count == 3)
        #expect(recorded.last?.body == frame)
        #expect(recorded.last?.timestampMs == 100)
        // The server saw our Set Chunk Size (message type 1) with 4096.
        let log = nginx.errorLog
        #expect(log.contains("RTMP recv chunk_size (1)"))
        #expect(log.contains("setting chunk_size=4096"), "no client Set Chunk Size 4096 in nginx debug log")
    }

    /// Writes spread over more than a second (so the incoming-data drain runs), then the
    /// server goes away: writes must fail with writeFailed, never crash or hang.
    @Test func serverLossIsWriteFailed() throws {
        let nginx = try NginxFixture(port: NginxFixture.freePort(offset: 3))
        defer { nginx.stop(); nginx.removeFiles() }
        let publisher = RTMPPublisher(url: "rtmp://127.0.0.1:\(nginx.port)/live", streamKey: Self.key)
        try publisher.open()
        let asc = hex("AF 00 12 10")
        var frame = hex("AF 01") + [UInt8](repeating: 0x21, count: 300)
        try asc.withUnsafeBytes { try publisher.write(FLVTag(type: .audio, timestampMs: 0, body: $0, isHeader: true)) }
        for i in 0..<60 {
            frame[2] = UInt8(i)
            try frame.withUnsafeBytes { try publisher.write(FLVTag(type: .audio, timestampMs: UInt32(i * 23), body: $0)) }
            usleep(25_000)
        }
        nginx.terminate()
        var failure: TransportError?
        for i in 60..<400 where failure == nil {
            do {
                try frame.withUnsafeBytes { try publisher.write(FLVTag(type: .audio, timestampMs: UInt32(i * 23), body: $0)) }
                usleep(10_000)
            } catch let e as TransportError { failure = e } catch { Issue.record("untyped error \(error)") }
        }
        let error = try #require(failure)
        guard case .writeFailed(let message) = error else { Issue.record("wrong error \(error)"); return }
        #expect(!message.contains("SECRET"))
        publisher.close()
    }

    @Test func closedPortFailsFastWithoutLeakingKey() throws {
        let port = NginxFixture.freePort(offset: 5)
        let publisher = RTMPPublisher(url: "rtmp://127.0.0.1:\(port)/live", streamKey: Self.key, connectTimeoutSeconds: 2)
        let start = Date()
        do {
            try publisher.open()
            Issue.record("connected to a closed port")
        } catch {
            guard case .connectFailed(let message) = error else { Issue.record("wrong error: \(error)"); return }
            #expect(!message.contains("SECRET"))
            #expect(!error.description.contains("SECRET"))
            #expect(message.contains("rtmp://127.0.0.1:\(port)/live/****"))
            #expect(message.contains("refused"))
        }
        #expect(Date().timeIntervalSince(start) < 1.5)
        // Writing on a publisher that never connected is a write failure, not a crash.
        #expect(throws: TransportError.self) {
            try [UInt8(0xAF), 0x01].withUnsafeBytes { try publisher.write(FLVTag(type: .audio, timestampMs: 0, body: $0)) }
        }
    }

    @Test func deniedPublishIsRejected() throws {
        let nginx = try NginxFixture(port: NginxFixture.freePort(offset: 2), denyPublish: true)
        defer { nginx.stop(); nginx.removeFiles() }
        let publisher = RTMPPublisher(url: "rtmp://127.0.0.1:\(nginx.port)/live", streamKey: Self.key)
        do {
            try publisher.open()
            Issue.record("publish was accepted; nginx log: \(nginx.errorLog)")
        } catch {
            guard case .publishRejected(let message) = error else { Issue.record("wrong error: \(error)"); return }
            #expect(!message.contains("SECRET"))
        }
        publisher.close()
    }

    /// Steady-state writes (chunking, sending, the periodic drain) allocate nothing. The publisher
    /// has no thread of its own, so the writing thread's count covers all of it.
    @Test(.enabled(if: AllocationCounter.isLoaded, "needs tools/allocshim preloaded (scripts/test does it)"))
    func steadyStateWritesDoNotAllocate() throws {
        let count = AllocationCounter.thisThread
        let nginx = try NginxFixture(port: NginxFixture.freePort(offset: 4))
        defer { nginx.stop(); nginx.removeFiles() }
        let publisher = RTMPPublisher(url: "rtmp://127.0.0.1:\(nginx.port)/live", streamKey: "alloc")
        try publisher.open()
        defer { publisher.close() }
        let asc = hex("AF 00 12 10")
        let video = [UInt8](repeating: 0x17, count: 9000) // spans three 4096-byte chunks
        var audio = hex("AF 01") + [UInt8](repeating: 0x21, count: 300)
        try asc.withUnsafeBytes { try publisher.write(FLVTag(type: .audio, timestampMs: 0, body: $0, isHeader: true)) }
        func burst(_ range: Range<Int>) throws {
            for i in range {
                audio[2] = UInt8(truncatingIfNeeded: i)
                try audio.withUnsafeBytes { try publisher.write(FLVTag(type: .audio, timestampMs: UInt32(i * 21), body: $0)) }
                try video.withUnsafeBytes { try publisher.write(FLVTag(type: .video, timestampMs: UInt32(i * 33), body: $0)) }
                if i % 20 == 0 { usleep(50_000) } // let the once-a-second drain run inside the window
            }
        }
        try burst(0..<50)
        let before = count()
        try burst(50..<600)
        let allocations = count() - before
        #expect(allocations == 0, "\(allocations) heap allocations in 1100 writes")
    }

    /// A second publisher of a live stream name gets NetStream.Publish.BadName from nginx-rtmp:
    /// `streamNameInUse`, with the status code and without the key. It is not a refusal: after a
    /// lost connection the name is held by our own old session, so reconnecting retries it.
    @Test func badNameStatusIsStreamNameInUse() throws {
        let nginx = try NginxFixture(port: NginxFixture.freePort(offset: 6))
        defer { nginx.stop(); nginx.removeFiles() }
        let first = RTMPPublisher(url: "rtmp://127.0.0.1:\(nginx.port)/live", streamKey: Self.key)
        try first.open()
        defer { first.close() }
        let second = RTMPPublisher(url: "rtmp://127.0.0.1:\(nginx.port)/live", streamKey: Self.key)
        do {
            try second.open()
            Issue.record("a second publish of the same name was accepted")
        } catch {
            guard case .streamNameInUse(let message) = error else { Issue.record("wrong error: \(error)"); return }
            #expect(message.contains("NetStream.Publish.BadName"))
            #expect(!message.contains("SECRET"))
            #expect(!error.isRefusal)
        }
        second.close()
    }

    @Test func invalidURLIsConnectFailed() {
        let publisher = RTMPPublisher(url: "http://example.com/live", streamKey: Self.key)
        #expect(throws: TransportError.connectFailed(RTMPURLError.unsupportedScheme("http").description)) {
            try publisher.open()
        }
    }
}
