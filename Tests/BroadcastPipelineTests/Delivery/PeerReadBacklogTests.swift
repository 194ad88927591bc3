import Glibc
import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// What a TCP peer holds unread, from the window it advertises (`PeerReadBacklog`, issue 38's
/// slow-reading far end): the rule, then the real kernel's window over a loopback connection whose
/// reader stops reading.
@Suite(.timeLimit(.minutes(1))) struct PeerReadBacklogTests {
    func info(acked: UInt64, window: UInt32?) -> TCPLinkInfo {
        TCPLinkInfo(bytesAcked: acked, rttMicros: 100, minRttMicros: 50, deliveryRateBytesPerSecond: 0,
                    deliveryRateAppLimited: true, sendWindowBytes: window)
    }

    @Test func theUnreadBytesAreTheWindowUnderTheWidestSeen() {
        var b = PeerReadBacklog()
        #expect(b.unread(info(acked: 0, window: 64_000), source: 0) == 0)
        // The window grows as the peer's buffer grows: nothing unread.
        #expect(b.unread(info(acked: 10_000, window: 1_000_000), source: 0) == 0)
        // The peer reads slower than the data arrives: its free space shrinks.
        #expect(b.unread(info(acked: 200_000, window: 820_000), source: 0) == 180_000)
        #expect(b.unread(info(acked: 400_000, window: 700_000), source: 0) == 300_000)
        // It catches up.
        #expect(b.unread(info(acked: 500_000, window: 1_000_000), source: 0) == 0)
    }

    @Test func aNewConnectionOrAnotherDestinationLearnsItsWindowAnew() {
        var b = PeerReadBacklog()
        _ = b.unread(info(acked: 1_000_000, window: 1_000_000), source: 0)
        // A reconnect: the acknowledged count restarts, and its window starts small.
        #expect(b.unread(info(acked: 5_000, window: 64_000), source: 0) == 0)
        #expect(b.widestWindow == 64_000)
        // Another destination is followed.
        #expect(b.unread(info(acked: 9_000_000, window: 30_000), source: 1) == 0)
        #expect(b.widestWindow == 30_000)
    }

    @Test func aKernelWithoutTheWindowShowsNothingUnread() {
        var b = PeerReadBacklog()
        _ = b.unread(info(acked: 1, window: 1_000_000), source: 0)
        #expect(b.unread(info(acked: 2, window: nil), source: 0) == 0)
        #expect(b.unread(nil, source: 0) == 0)
        #expect(b.widestWindow == 0)
    }

    /// The real kernel: a loopback peer that stops reading. The window it advertises shrinks by
    /// what it holds, and grows back once it reads.
    @Test func theKernelsWindowShowsAReaderThatStopped() throws {
        // A peer buffer of 1 MiB, as the relay of tools/bitrate_shaped.py --slow-reader has.
        let pair = try #require(LoopbackTCPPair(peerReceiveBuffer: 1 << 20))
        defer { pair.close() }
        let (client, peer) = (pair.client, pair.peer)
        var backlog = PeerReadBacklog()
        // The peer reads everything of a first 4 MB: its window opens as wide as its buffer lets it
        // (it grows with what arrives, as on a long stream).
        let chunk = [UInt8](repeating: 7, count: 64_000)
        var sink = [UInt8](repeating: 0, count: 1 << 17)
        func send(_ n: Int) { for _ in 0..<n { _ = chunk.withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, 0) } } }
        func drain(_ total: Int) throws {
            var got = 0
            while got < total {
                let n = sink.withUnsafeMutableBytes { recv(peer, $0.baseAddress, $0.count, 0) }
                try #require(n > 0)
                got += n
            }
        }
        // The window a reading of TCP_INFO shows is the one of the last ACK: wait for the ACK of
        // everything sent (a peer that does not read delays its ACKs by tens of ms).
        func acked(_ total: UInt64) -> TCPLinkInfo? {
            var now = TCPLinkInfo.read(client)
            for _ in 0..<200 where (now?.bytesAcked ?? 0) <= total {
                usleep(5_000)
                now = TCPLinkInfo.read(client)
            }
            return now
        }
        for _ in 0..<64 {
            send(1)
            try drain(64_000)
        }
        let open = try #require(acked(64 * 64_000))
        // tcpi_snd_wnd is in Debian 12's kernel (6.1) and later.
        try #require(open.sendWindowBytes != nil, "this kernel's TCP_INFO has no tcpi_snd_wnd")
        #expect(backlog.unread(open, source: 0) == 0)
        // The peer stops reading: 256 KB arrive and stay unread.
        send(4)
        let stopped = try #require(acked(68 * 64_000))
        let unread = backlog.unread(stopped, source: 0)
        // The window is buffer space rounded and scaled by the kernel: 191 KB for these 256 KB.
        #expect(unread >= 128_000 && unread <= 512_000, "\(unread) for 256000 held unread; \(open) -> \(stopped)")
        // It reads them: the window opens again (the next ACK, for the next bytes, says so).
        try drain(4 * 64_000)
        _ = Glibc.send(client, chunk, 1000, 0)
        let read = try #require(acked(68 * 64_000 + 1000))
        #expect(backlog.unread(read, source: 0) < unread / 4, "\(stopped) -> \(read)")
    }
}
