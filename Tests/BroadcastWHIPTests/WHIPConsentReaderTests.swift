import Glibc
import Synchronization
import Testing
@testable import BroadcastWHIP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

/// The `bk-whip-rx` reader's consent rule end to end on loopback: our ICE agent connects to a second
/// agent standing in for the endpoint's ICE (it answers checks as any ICE agent must), which then keeps
/// sending datagrams (so the 10 s silence rule never fires) while it answers, or stops answering, our
/// consent checks. The reader runs on a clock about 12 times faster than real time.
@Suite("WHIP consent through the feedback reader", .timeLimit(.minutes(1)), .serialized)
struct WHIPConsentReaderTests {
    /// What the test, the stand-in endpoint's thread and the reader's clock share.
    final class Shared: @unchecked Sendable {
        let endpoint: ICEAgent
        let stop = Atomic<Bool>(false)
        let answering = Atomic<Bool>(true)
        let fake = Atomic<Int64>(0)
        init(_ endpoint: ICEAgent) { self.endpoint = endpoint }
    }

    /// Returns the reader's lost reason (nil: still alive) after `fakeSeconds` of its clock.
    static func run(answeringConsent: Bool, fakeSeconds: Int64) throws -> String? {
        let us = try ICEAgent(), endpoint = try ICEAgent()
        let shared = Shared(endpoint)
        let fp = (0..<32).map { _ in "AB" }.joined(separator: ":")
        let answer = try SDPAnswer(parsing: "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=ice-ufrag:\(endpoint.localUfrag)\r\n"
            + "a=ice-pwd:\(endpoint.localPwd)\r\na=fingerprint:sha-256 \(fp)\r\n"
            + "a=candidate:1 1 udp 100 127.0.0.1 \(endpoint.port) typ host\r\n")
        // The endpoint's side: answers checks while `answering`, else reads and drops them.
        let peer = WorkerThread(name: "test-peer")
        try peer.start {
            let endpoint = shared.endpoint
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 4)
            defer { buffer.deallocate() }
            while !shared.stop.load(ordering: .acquiring) {
                var pfd = pollfd(fd: endpoint.fd, events: Int16(POLLIN), revents: 0)
                guard poll(&pfd, 1, 10) > 0 else { continue }
                var from = sockaddr_in()
                var len = socklen_t(MemoryLayout<sockaddr_in>.size)
                let n = withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(endpoint.fd, buffer.baseAddress, 2048, 0, $0, &len) }
                }
                if n > 0, shared.answering.load(ordering: .acquiring) {
                    _ = endpoint.handle(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), from: from)
                }
            }
        }
        defer {
            shared.stop.store(true, ordering: .releasing)
            peer.join()
        }
        try us.connect(answer: answer, timeoutMs: 5000) { false }
        shared.answering.store(answeringConsent, ordering: .releasing)
        let start = ICEAgent.nowNs()
        shared.fake.store(start, ordering: .releasing)
        let reader = WHIPFeedbackReader(ice: us, dtls: try DTLSSRTPTransport(), keyframeRequester: nil,
                                        clock: { shared.fake.load(ordering: .acquiring) })
        try reader.start()
        defer { reader.stop() }
        // An RTCP-looking datagram the reader cannot authenticate: heard, then dropped.
        let junk: [UInt8] = [0x80, 0xC9, 0x00, 0x01, 1, 2, 3, 4, 5, 6, 7, 8]
        var to = sockaddr_in()
        to.sin_family = sa_family_t(AF_INET)
        to.sin_port = us.port.bigEndian
        to.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        while shared.fake.load(ordering: .acquiring) - start < fakeSeconds * 1_000_000_000, reader.lostReason == nil {
            _ = junk.withUnsafeBytes { b in
                withUnsafePointer(to: &to) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(endpoint.fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            usleep(20_000)
            shared.fake.add(250_000_000, ordering: .releasing)
        }
        usleep(100_000)  // the reader's next turn sees the last step
        return reader.lostReason
    }

    @Test func unansweredConsentIsALostConnection() throws {
        let why = try Self.run(answeringConsent: false, fakeSeconds: 45)
        #expect(why == "the endpoint stopped answering consent checks (30 s)")
    }

    @Test func answeredConsentKeepsTheSession() throws {
        #expect(try Self.run(answeringConsent: true, fakeSeconds: 40) == nil)
    }
}
