#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import BroadcastKit
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastFLV
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording
import BroadcastTestSupport

/// `ControlServer` from a client's side: raw `socket`/`send`/`recv` on the test's thread while
/// the socket's own `bk-control` thread serves, so the two threads' sharing of the client list,
/// the session and the subscriber fan-out runs under TSan and ASan (scripts/sanitize).
/// Written against the socket's package API (`init(path:)`, `start(session:version:onStop:)`, `publish`, `close`).
@Suite(.serialized, .timeLimit(.minutes(2))) struct ControlServerThreadTests {
    private static func scratchPath(_ name: String) -> String {
        var template = Array("/tmp/bk-control-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        return dir + "/" + name
    }

    private static func session() throws -> BroadcastSession {
        var cfg = BroadcastConfiguration.default
        cfg.video = VideoEncoderSettings(width: 320, height: 240, fps: 30, bitrateKbps: 300, preset: "ultrafast",
                                         threads: 1, slicedThreads: false)
        cfg.destinations = [.discard]
        cfg.memoryBudgetBytes = 0
        cfg.adaptiveBitrate = false
        let s = BroadcastSession(configuration: cfg)
        try s.start()
        return s
    }

    /// A connected, blocking client with a receive timeout.
    private struct Client {
        let fd: Int32
        init(path: String) throws {
            fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            try #require(fd >= 0)
            var addr = sockaddr_un()
            addr.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &addr.sun_path) { raw in
                for (i, b) in path.utf8.enumerated() { raw[i] = b }
            }
            let rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            try #require(rc == 0, "connect: \(errno)")
            var tv = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        }
        func send(_ line: String) {
            var bytes = Array(line.utf8)
            bytes.append(0x0A)
            _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        /// One line of the answer (without its newline), or nil on timeout/EOF.
        func line() -> String? {
            var out: [UInt8] = []
            var b: UInt8 = 0
            while recv(fd, &b, 1, 0) == 1 {
                if b == 0x0A { return String(decoding: out, as: UTF8.self) }
                out.append(b)
            }
            return nil
        }
        func close() { _ = Glibc.close(fd) }
    }

    @Test func answersCommandsAndRefusesGarbageFromAnotherThread() throws {
        let path = Self.scratchPath("ctl.sock")
        let control = try ControlServer(path: path)
        var st = stat()
        #expect(lstat(path, &st) == 0 && st.st_mode & 0o777 == 0o600, "the socket is 0600")
        let session = try Self.session()
        try control.start(session: session, version: "test") {}
        let client = try Client(path: path)
        client.send("stats")
        let stats = try #require(client.line())
        #expect(stats.hasPrefix("{") && stats.contains("\"video_frames_in\""), "\(stats)")
        client.send("keyframe")
        #expect(client.line() == "{\"ok\":true}")
        client.send("no-such-command")
        let refused = try #require(client.line())
        #expect(refused.contains("\"ok\":false"), "\(refused)")
        client.send(String(repeating: "x", count: ControlServer.maxLine + 10))
        let tooLong = try #require(client.line())
        #expect(tooLong.contains("line longer than"), "\(tooLong)")
        #expect(client.line() == nil, "an over-long line closes the client")
        client.close()
        control.close()
        session.finish()
        #expect(access(path, F_OK) != 0, "close() removes the socket file")
    }

    @Test func subscribersGetWhatAnotherThreadPublishes() throws {
        let path = Self.scratchPath("sub.sock")
        let control = try ControlServer(path: path)
        let session = try Self.session()
        try control.start(session: session, version: "test") {}
        let client = try Client(path: path)
        client.send("subscribe")
        #expect(client.line() == "{\"ok\":true,\"subscribed\":true}")
        // A subscriber to a running session is told it started first.
        #expect(client.line()?.hasPrefix("{\"event\":\"started\"") == true)
        // Published from this thread while bk-control polls: every event arrives, in order.
        for i in 0..<50 {
            control.publish(ControlServer.eventJSON(.reconnected(count: i))!)
        }
        for i in 0..<50 {
            #expect(client.line() == "{\"event\":\"reconnected\",\"count\":\(i)}")
        }
        client.close()
        control.close()
        session.finish()
    }

    @Test func anExistingPathIsRefusedWithOneLine() throws {
        let path = Self.scratchPath("taken")
        let fd = open(path, O_CREAT | O_WRONLY, 0o600)
        _ = Glibc.close(fd)
        #expect(throws: BroadcastError.self) { _ = try ControlServer(path: path) }
        do {
            _ = try ControlServer(path: path)
        } catch {
            #expect(error.description.contains("already exists") && !error.description.contains("\n"), "\(error.description)")
        }
        unlink(path)
    }
}
