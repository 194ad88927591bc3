import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// The plain RTMP handshake (RTMP 1.0 spec §5.2), version 3: C0+C1 out, S0+S1 in, C2 (an echo
/// of S1) out, S2 in. No digest: nginx-rtmp, and every ingest that takes FFmpeg's and OBS's
/// plain handshake, answers it.
enum RTMPHandshake {
    static let version: UInt8 = 3
    /// C1, S1, C2 and S2 are each 1536 bytes: time (4), zero or time2 (4), 1528 random bytes.
    static let packetSize = 1536

    /// Why the handshake failed.
    package enum Failure: Error, Equatable {
        case io(TCPSocket.Failure)
        /// S0 named another protocol version (e.g. an HTTP or TLS server on that port).
        case wrongVersion(UInt8)
    }

    /// Writes C0 and C1 (1 + 1536 bytes) at `out`: our epoch `time`, four zero bytes, then
    /// pseudo-random filler (the spec asks for unpredictable-enough, not secret, bytes).
    static func writeC0C1(into out: UnsafeMutableRawPointer, time: UInt32, seed: UInt64) {
        var w = ByteCursor(base: out)
        w.put(version)
        w.put32(time)
        w.put32(0)
        var random = SplitMixRandom(seed: seed)
        while w.offset < 1 + packetSize {
            let word = random.next()
            for shift in stride(from: 0, to: 64, by: 8) where w.offset < 1 + packetSize {
                w.put(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
            }
        }
    }

    /// Writes C2 (1536 bytes) at `out`: S1's time, the time we read S1, and S1's random bytes.
    static func writeC2(into out: UnsafeMutableRawPointer, echoing s1: UnsafeRawPointer, readTime: UInt32) {
        var w = ByteCursor(base: out)
        w.copy(s1, count: 4)
        w.put32(readTime)
        w.copy(s1 + 8, count: packetSize - 8)
    }

    /// Runs the handshake on `socket`, using `scratch` (at least 2 × 1537 bytes) for the packets;
    /// each wait for the server is bounded by `timeoutMs`.
    static func perform(on socket: TCPSocket, scratch: UnsafeMutableRawPointer,
                                timeoutMs: Int32) throws(Failure) {
        let epochStart = MediaTime.now()
        func elapsedMs() -> UInt32 { UInt32(truncatingIfNeeded: (MediaTime.now() - epochStart) / 1_000_000) }

        writeC0C1(into: scratch, time: 0, seed: UInt64(bitPattern: epochStart) ^ 0x5254_4D50)
        do { try socket.send(scratch, count: 1 + packetSize, timeoutMs: timeoutMs) } catch { throw .io(error) }

        let s0s1 = scratch + 1 + packetSize
        try read(socket, into: s0s1, count: 1 + packetSize, timeoutMs: timeoutMs)
        let s0 = s0s1.load(as: UInt8.self)
        guard s0 == version else { throw .wrongVersion(s0) }
        writeC2(into: scratch, echoing: s0s1 + 1, readTime: elapsedMs())
        do { try socket.send(scratch, count: packetSize, timeoutMs: timeoutMs) } catch { throw .io(error) }

        // S2 should echo C1; servers differ in what they put there, so it is read, not checked.
        try read(socket, into: s0s1, count: packetSize, timeoutMs: timeoutMs)
    }

    private static func read(_ socket: TCPSocket, into buffer: UnsafeMutableRawPointer, count: Int,
                             timeoutMs: Int32) throws(Failure) {
        var got = 0
        while got < count {
            let n: Int
            do { n = try socket.receive(into: buffer + got, capacity: count - got, timeoutMs: timeoutMs) } catch {
                throw .io(error)
            }
            if n == 0 { throw .io(.timedOut) }
            got += n
        }
    }
}
