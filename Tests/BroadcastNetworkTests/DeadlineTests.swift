import Glibc
import Testing
@testable import BroadcastNetwork
import BroadcastCore
import BroadcastPipeline
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(1))) struct DeadlineTests {
    @Test func remainingIsBoundedAndRoundsUp() {
        #expect(Deadline.never.remainingMs(cap: 250) == 250)
        #expect(Deadline(ns: MediaTime.now() - 1).remainingMs() == 0)
        #expect(Deadline(ns: MediaTime.now() - 1).hasPassed)
        let d = Deadline.after(milliseconds: 1000)
        #expect((900...1000).contains(d.remainingMs()))
        #expect(d.remainingMs(cap: 10) == 10)
        #expect(d.earliest(.never) == d)
    }

    @Test func stopFlagWakesAPoll() {
        let flag = StopFlag()
        #expect(!flag.isSet)
        var pfd = pollfd(fd: flag.wakeFD, events: Int16(POLLIN), revents: 0)
        #expect(poll(&pfd, 1, 0) == 0)
        flag.set()
        #expect(flag.isSet)
        #expect(poll(&pfd, 1, 0) == 1)
        flag.set()
        #expect(poll(&pfd, 1, 0) == 1, "stays readable")
    }

    /// A peer that sends one byte every 100 ms never lets a per-read timeout fire; the
    /// operation's deadline ends the whole read at 500 ms whatever the pace.
    @Test func aTricklingPeerCannotStretchTheOperation() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let peer = fds[1]
        // The writer owns its end: it closes it once our end is gone (EPIPE), so its descriptor
        // number is never closed while another test may have reused it.
        let writer = Thread {
            var b: UInt8 = 7
            for _ in 0..<100 {
                if send(peer, &b, 1, Int32(MSG_NOSIGNAL)) != 1 { break }
                usleep(100_000)
            }
            close(peer)
        }
        writer.start()
        let socket = try TCPSocket.adopt(fd: fds[0])
        socket.operation = .init(deadline: .after(milliseconds: 500), stop: nil)
        let start = MediaTime.now()
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 1)
        defer { buffer.deallocate() }
        var got = 0
        var failure: TCPSocket.Failure?
        while failure == nil {
            do throws(TCPSocket.Failure) { got += try socket.receive(into: buffer, capacity: 1, timeoutMs: 300) } catch {
                failure = error
            }
        }
        let took = Double(MediaTime.now() - start) / 1e6
        #expect(failure == .deadlinePassed)
        #expect(got >= 3)
        #expect(took >= 490 && took < 900, "ended at \(took) ms")
        socket.close()
    }

    @Test func aStopWakesAWaitAtOnce() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[1]) }
        let flag = StopFlag()
        let socket = try TCPSocket.adopt(fd: fds[0])
        socket.operation = .init(deadline: .after(milliseconds: 10_000), stop: flag)
        let setter = Thread {
            usleep(200_000)
            flag.set()
        }
        setter.start()
        let start = MediaTime.now()
        var byte: UInt8 = 0
        var failure: TCPSocket.Failure?
        do throws(TCPSocket.Failure) { _ = try socket.receive(into: &byte, capacity: 1, timeoutMs: 10_000) } catch {
            failure = error
        }
        let took = Double(MediaTime.now() - start) / 1e6
        #expect(failure == .stopped)
        #expect(took >= 190 && took < 1000, "woke after \(took) ms")
        socket.close()
    }
}

/// A detached pthread running `body` (Foundation's Thread is not available here).
private final class Thread: @unchecked Sendable {
    private let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
    func start() {
        var tid = pthread_t()
        let box = Unmanaged.passRetained(self).toOpaque()
        _ = pthread_create(&tid, nil, { arg in
            let t = Unmanaged<Thread>.fromOpaque(arg!).takeRetainedValue()
            t.body()
            return nil
        }, box)
        pthread_detach(tid)
    }
}
