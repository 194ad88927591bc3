#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// `--control PATH`: a Unix socket (mode 0600) that takes one command per line and answers
/// with one JSON object per line (see `ControlCommand`), and streams events to subscribers.
///
/// One thread (`bk-control`) polls the listener and every client. Sockets are non-blocking:
/// a client that sends garbage gets an error object, one that sends an over-long line or stops
/// reading its answers is dropped, one idle for a minute is closed; none can hold up the stream,
/// which this thread never touches except through the session's thread-safe calls.
final class ControlSocket: @unchecked Sendable {
    static let maxClients = 8
    static let maxLine = 4096
    static let idleNs: Int64 = 60_000_000_000

    private final class Client {
        let id: Int
        let fd: Int32
        var buffer: [UInt8] = []
        var subscribed = false
        var dead = false
        var lastActivityNs = MediaTime.now()
        init(id: Int, fd: Int32) { self.id = id; self.fd = fd; buffer.reserveCapacity(ControlSocket.maxLine) }
    }

    let path: String
    private let listenFD: Int32
    private var wake: (read: Int32, write: Int32) = (-1, -1)
    private let lock = ConditionLock()
    private var clients: [Client] = []
    private var nextID = 1
    private var stopping = false
    private var thread: WorkerThread?
    private var session: BroadcastSession?
    private var previousStats: StatsSnapshot?
    private var startNs = MediaTime.now()

    /// Binds the socket; refuses a path that exists (another run's socket, or a file) or whose
    /// directory is missing, with a one-line reason.
    init(path: String) throws(ConfigurationError) {
        var st = stat()
        if lstat(path, &st) == 0 {
            throw ConfigurationError(.usage, "--control \(path): already exists (another broadcast's socket? remove it if stale)")
        }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw ConfigurationError(.usage, "--control \(path): a socket path must be 1 to \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw ConfigurationError(.usage, "--control \(path): socket: \(SystemError.describe())") }
        let oldMask = umask(0o177)                 // created 0600: only this user may connect
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        let bindErrno = errno
        umask(oldMask)
        guard rc == 0 else {
            Glibc.close(fd)
            throw ConfigurationError(.usage, "--control \(path): \(SystemError.describe(bindErrno))")
        }
        chmod(path, 0o600)
        guard listen(fd, 8) == 0 else {
            let reason = SystemError.describe()
            Glibc.close(fd); unlink(path)
            throw ConfigurationError(.usage, "--control \(path): listen: \(reason)")
        }
        listenFD = fd
        self.path = path
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for f in fds { Self.setNonBlocking(f) }
            wake = (fds[0], fds[1])
        }
    }

    /// Starts serving `session`.
    func start(session: BroadcastSession) throws(WorkerThread.StartFailure) {
        self.session = session
        startNs = MediaTime.now()
        let t = WorkerThread(name: "bk-control")
        try t.start { [self] in serve() }
        thread = t
    }

    /// Stops the thread, closes every client and removes the socket file.
    func close() {
        lock.withLock { stopping = true }
        if wake.write >= 0 { var b: UInt8 = 1; _ = write(wake.write, &b, 1) }
        thread?.join()
        thread = nil
        lock.withLock {
            for c in clients { Glibc.close(c.fd) }
            clients.removeAll()
        }
        Glibc.close(listenFD)
        if wake.read >= 0 { Glibc.close(wake.read); Glibc.close(wake.write) }
        unlink(path)
    }

    /// Sends `json` (one object, no newline) to every subscriber.
    func publish(_ json: String) {
        lock.withLock {
            for c in clients where c.subscribed && !c.dead { sendLocked(c, json) }
        }
        poke()
    }

    /// The event as a JSON object for subscribers.
    static func eventJSON(_ e: BroadcastEvent) -> String? {
        switch e {
        case .warning(let m): return "{\"event\":\"warning\",\"message\":\(FlatJSON.quote(m))}"
        case .failed(let m): return "{\"event\":\"failed\",\"message\":\(FlatJSON.quote(m))}"
        case .reconnecting(let a, let d): return "{\"event\":\"reconnecting\",\"attempt\":\(a),\"delay_s\":\(fixed(d, 1))}"
        case .reconnected(let n): return "{\"event\":\"reconnected\",\"count\":\(n)}"
        case .started, .finished: return nil
        }
    }

    static func clipJSON(_ clip: ReplayClip) -> String {
        "\"path\":\(FlatJSON.quote(clip.path)),\"duration_s\":\(fixed(clip.durationSeconds, 3)),\"bytes\":\(clip.bytes)"
    }

    // MARK: - The control thread

    private func poke() {
        if wake.write >= 0 { var b: UInt8 = 1; _ = write(wake.write, &b, 1) }
    }

    private func serve() {
        var fds: [pollfd] = []
        var ids: [Int] = []
        var scratch = [UInt8](repeating: 0, count: 1024)
        while true {
            fds.removeAll(keepingCapacity: true)
            ids.removeAll(keepingCapacity: true)
            let done: Bool = lock.withLock {
                if stopping { return true }
                // Reap clients marked dead by other threads, and those idle too long.
                let now = MediaTime.now()
                clients.removeAll { c in
                    if c.dead || (!c.subscribed && now - c.lastActivityNs > Self.idleNs) { Glibc.close(c.fd); return true }
                    return false
                }
                fds.append(pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0))
                if wake.read >= 0 { fds.append(pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)) }
                for c in clients {
                    fds.append(pollfd(fd: c.fd, events: Int16(POLLIN), revents: 0))
                    ids.append(c.id)
                }
                return false
            }
            if done { return }
            let fixedCount = wake.read >= 0 ? 2 : 1
            _ = poll(&fds, nfds_t(fds.count), 1000)
            if wake.read >= 0 && fds[1].revents != 0 { while read(wake.read, &scratch, scratch.count) > 0 {} }
            if fds[0].revents & Int16(POLLIN) != 0 { acceptClients() }
            for (i, id) in ids.enumerated() where fds[fixedCount + i].revents != 0 {
                readClient(id: id, scratch: &scratch)
            }
        }
    }

    private func acceptClients() {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 { return }
            Self.setNonBlocking(fd)
            lock.withLock {
                let c = Client(id: nextID, fd: fd)
                nextID += 1
                if clients.count >= Self.maxClients {
                    sendLocked(c, "{\"ok\":false,\"error\":\"too many control clients (\(Self.maxClients))\"}")
                    Glibc.close(fd)
                } else {
                    clients.append(c)
                }
            }
        }
    }

    private func readClient(id: Int, scratch: inout [UInt8]) {
        guard let c = lock.withLock({ clients.first { $0.id == id } }) else { return }
        let n = scratch.withUnsafeMutableBytes { recv(c.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) {
            lock.withLock { c.dead = true }
            return
        }
        guard n > 0 else { return }
        c.lastActivityNs = MediaTime.now()
        for b in scratch[0..<n] {
            if b == 0x0A {
                let line = String(decoding: c.buffer, as: UTF8.self)
                c.buffer.removeAll(keepingCapacity: true)
                handle(line, from: c)
            } else if c.buffer.count >= Self.maxLine {
                lock.withLock {
                    sendLocked(c, "{\"ok\":false,\"error\":\"line longer than \(Self.maxLine) bytes; closing\"}")
                    c.dead = true
                }
                return
            } else {
                c.buffer.append(b)
            }
        }
    }

    private func reply(_ c: Client, _ json: String) {
        lock.withLock { sendLocked(c, json) }
    }

    private func handle(_ line: String, from c: Client) {
        guard let session else { return }
        if line.allSatisfy({ $0 == " " || $0 == "\r" || $0 == "\t" }) { return }
        let command: ControlCommand
        switch ControlCommand.parse(line) {
        case .success(let cmd): command = cmd
        case .failure(let e):
            reply(c, "{\"ok\":false,\"error\":\(FlatJSON.quote(e.message))}")
            return
        }
        switch command {
        case .stats:
            let snap = session.stats.snapshot()
            let report = StatsReport(snap, previous: previousStats, startNs: startNs, state: session.statusText,
                                     latencyMs: session.videoLatencyMs)
            previousStats = snap
            reply(c, report.json)
        case .keyframe:
            session.requestKeyframe()
            reply(c, "{\"ok\":true}")
        case .setBitrate(let kbps):
            reply(c, session.setVideoBitrate(kbps: kbps) ? "{\"ok\":true,\"kbps\":\(kbps)}"
                                                         : "{\"ok\":false,\"error\":\"no video to set a bitrate on\"}")
        case .stop:
            reply(c, "{\"ok\":true}")
            _ = stopSignals.add(1, ordering: .relaxed)
        case .subscribe:
            lock.withLock { c.subscribed = true }
            reply(c, "{\"ok\":true,\"subscribed\":true}")
        case .saveReplay(let seconds, let path):
            let id = c.id
            session.saveReplay(to: path, seconds: seconds) { [self] result in
                let json: String
                switch result {
                case .success(let clip):
                    json = "{\"ok\":true,\(Self.clipJSON(clip))}"
                    publish("{\"event\":\"replay-saved\",\(Self.clipJSON(clip))}")
                case .failure(let e): json = "{\"ok\":false,\"error\":\(FlatJSON.quote(e.description))}"
                }
                lock.withLock {
                    if let c = clients.first(where: { $0.id == id && !$0.dead }) { sendLocked(c, json) }
                }
            }
        }
    }

    private static func setNonBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    /// Non-blocking send of one line; a client that cannot take it is dropped.
    private func sendLocked(_ c: Client, _ json: String) {
        guard !c.dead else { return }
        var bytes = Array(json.utf8)
        bytes.append(0x0A)
        let n = bytes.withUnsafeBytes { send(c.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        if n != bytes.count { c.dead = true }
    }
}
