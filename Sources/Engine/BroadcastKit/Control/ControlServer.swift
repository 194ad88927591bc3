#if canImport(Glibc)
import Glibc
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording
#endif

/// The control socket (`broadcast --control PATH`, `bk_session_open_control`): a Unix socket
/// (mode 0600) that takes one request per line and answers with one JSON object per line (see
/// `ControlCommand`), and streams events to subscribers. The protocol, its version and every
/// command, field, error and event are `docs/control-protocol.md`.
///
/// One thread (`bk-control`) polls the listener and every client. Sockets are non-blocking: a
/// client that sends garbage gets an error object, one that sends an over-long line or stops
/// reading its answers is dropped, one idle for a minute is closed; none can hold up the stream,
/// which this thread never touches except through the session's thread-safe calls. Only the
/// socket owner's uid and root may connect (`SO_PEERCRED`, whatever the file's mode). At most
/// `maxClients` are connected and at most `maxClients - 1` subscribe, so a command such as `stop`
/// always finds a slot: when every slot is taken, the client idle the longest is closed for it.
package final class ControlServer: @unchecked Sendable {
    /// The protocol's version, answered by `version` (`docs/control-protocol.md`).
    static let protocolVersion = 1
    static let maxClients = 8
    static let maxLine = 4096
    static let idleNs: Int64 = 60_000_000_000
    /// At most one `dropped` event per this interval, carrying the drops since the last one.
    static let droppedEventIntervalNs: Int64 = 1_000_000_000

    private final class Client {
        let id: Int
        let fd: Int32
        var buffer: [UInt8] = []
        var subscribed = false
        var dead = false
        var lastActivityNs = MediaTime.now()
        init(id: Int, fd: Int32) { self.id = id; self.fd = fd; buffer.reserveCapacity(ControlServer.maxLine) }
    }

    let path: String
    /// Set when a stale socket (no listener: a killed run's) was replaced; say it to the user.
    package private(set) var takeoverNote: String?
    private let listenFD: Int32
    private let ownerUID = geteuid()
    private var wake: (read: Int32, write: Int32) = (-1, -1)
    private let lock = ConditionLock()
    private var clients: [Client] = []
    private var nextID = 1
    private var stopping = false
    private var thread: WorkerThread?
    private var session: BroadcastSession?
    private var onStop: (@Sendable () -> Void)?
    private var versionText = ""
    private var previousStats: StatsSnapshot?
    private var startNs = MediaTime.now()
    // The control thread's view of the counters, for bitrate-changed and dropped events.
    private var lastTargetKbps = 0
    private var lastDrops = 0
    private var lastDroppedEventNs: Int64 = 0

    /// Binds the socket. A path that holds a socket nobody listens on (a killed run's) is taken
    /// over, with `takeoverNote` set; a live socket, any other file, a link or a missing directory
    /// is refused with a one-line reason (`.configuration`).
    package init(path: String) throws(BroadcastError) {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw .configuration("\(path): a socket path must be 1 to \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        var st = stat()
        if lstat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFSOCK else {
                throw .configuration("\(path): already exists and is not a socket")
            }
            guard st.st_uid == ownerUID else {
                throw .configuration("\(path): a socket of another user (uid \(st.st_uid)); not taken over")
            }
            if Self.hasListener(&addr) {
                throw .configuration("\(path): already in use by a running broadcast")
            }
            // Nobody listens: the socket of a run that was killed. Replace it, as mpv does.
            guard unlink(path) == 0 else { throw .configuration("\(path): stale socket: \(SystemError.describe())") }
            takeoverNote = "\(path): took over a stale control socket (no process was listening)"
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .configuration("\(path): socket: \(SystemError.describe())") }
        let oldMask = umask(0o177)                 // created 0600: only this user may connect
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        let bindErrno = errno
        umask(oldMask)
        guard rc == 0 else {
            Glibc.close(fd)
            throw .configuration("\(path): \(SystemError.describe(bindErrno))")
        }
        chmod(path, 0o600)
        guard listen(fd, 8) == 0 else {
            let reason = SystemError.describe()
            Glibc.close(fd); unlink(path)
            throw .configuration("\(path): listen: \(reason)")
        }
        listenFD = fd
        self.path = path
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for f in fds { Self.setNonBlocking(f) }
            wake = (fds[0], fds[1])
        }
    }

    /// Whether a process accepts connections on the socket at `addr` (a refused connect: none).
    private static func hasListener(_ addr: inout sockaddr_un) -> Bool {
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return true }
        defer { Glibc.close(probe) }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return rc == 0 || errno != ECONNREFUSED
    }

    /// Starts serving `session`: `onStop` runs (on the control thread) for a `stop` request;
    /// `version` is the build's version text for the `version` command.
    package func start(session: BroadcastSession, version: String,
                       onStop: @escaping @Sendable () -> Void) throws(WorkerThread.StartFailure) {
        self.session = session
        self.onStop = onStop
        versionText = version
        startNs = MediaTime.now()
        let t = WorkerThread(name: "bk-control")
        try t.start { [self] in serve() }
        thread = t
    }

    /// Stops the thread, closes every client and removes the socket file.
    package func close() {
        lock.withLock { stopping = true }
        poke()
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
    package func publish(_ json: String) {
        lock.withLock {
            for c in clients where c.subscribed && !c.dead { sendLocked(c, json) }
        }
        poke()
    }

    /// The `stopped` event: the run is over, with its exit code and why (sent before `close()`).
    package func publishStopped(exitCode: Int32, reason: String) {
        publish("{\"event\":\"stopped\",\"exit_code\":\(exitCode),\"reason\":\(FlatJSON.quote(reason))}")
    }

    /// The event as a JSON object for subscribers (`finished` is said as `stopped`, with the reason).
    package static func eventJSON(_ e: BroadcastEvent) -> String? {
        switch e {
        case .started(let names):
            return "{\"event\":\"started\",\"destinations\":[\(names.map(FlatJSON.quote).joined(separator: ","))]}"
        case .warning(let m): return "{\"event\":\"warning\",\"message\":\(FlatJSON.quote(m))}"
        case .failed(let m): return "{\"event\":\"failed\",\"message\":\(FlatJSON.quote(m))}"
        case .reconnecting(let a, let d): return "{\"event\":\"reconnecting\",\"attempt\":\(a),\"delay_s\":\(fixed(d, 1))}"
        case .reconnected(let n): return "{\"event\":\"reconnected\",\"count\":\(n)}"
        case .finished: return nil
        }
    }

    package static func clipJSON(_ clip: ReplayClip) -> String {
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
            publishCounterEvents()
        }
    }

    /// `bitrate-changed` when the target moved (a `set-bitrate`, the adaptive bitrate), and at most
    /// one `dropped` per `droppedEventIntervalNs` with the drops since the last one.
    private func publishCounterEvents() {
        guard let session else { return }
        let snap = session.stats.snapshot()
        if snap.targetVideoKbps != lastTargetKbps {
            if lastTargetKbps != 0 { publish("{\"event\":\"bitrate-changed\",\"kbps\":\(snap.targetVideoKbps),\"previous_kbps\":\(lastTargetKbps)}") }
            lastTargetKbps = snap.targetVideoKbps
        }
        let total = snap.totalDrops
        let now = MediaTime.now()
        if total > lastDrops && now - lastDroppedEventNs >= Self.droppedEventIntervalNs {
            let reasons = DropReason.allCases.filter { snap.drops($0) > 0 }
                .map { "\(FlatJSON.quote($0.rawValue)):\(snap.drops($0))" }.joined(separator: ",")
            publish("{\"event\":\"dropped\",\"count\":\(total - lastDrops),\"total\":\(total),\"by_reason\":{\(reasons)}}")
            lastDrops = total
            lastDroppedEventNs = now
        }
    }

    /// The uid of the process at the other end of `fd` (`SO_PEERCRED`), or nil.
    private static func peerUID(_ fd: Int32) -> uid_t? {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; }
        var cred: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var len = socklen_t(MemoryLayout.size(ofValue: cred))
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0,
              Int(len) == MemoryLayout.size(ofValue: cred) else { return nil }
        return cred.uid
    }

    private func acceptClients() {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 { return }
            Self.setNonBlocking(fd)
            let c = Client(id: 0, fd: fd)
            // Whatever the file's mode (a chmod, a socket in a shared directory): only the owner and root.
            guard let uid = Self.peerUID(fd), uid == ownerUID || uid == 0 else {
                lock.withLock { sendLocked(c, "{\"ok\":false,\"error\":\"permission denied: only the socket's owner or root may connect\"}") }
                Glibc.close(fd)
                continue
            }
            lock.withLock {
                if clients.count >= Self.maxClients {
                    // Keep a slot for a command: close the client idle the longest (never a subscriber
                    // with room to spare: subscribers are capped at maxClients - 1, so one idle always exists).
                    if let victim = clients.filter({ !$0.subscribed && !$0.dead }).min(by: { $0.lastActivityNs < $1.lastActivityNs }) {
                        sendLocked(victim, "{\"ok\":false,\"error\":\"closed: idle while every control slot was taken\"}")
                        victim.dead = true
                        Glibc.close(victim.fd)
                        clients.removeAll { $0 === victim }
                    }
                }
                let accepted = Client(id: nextID, fd: fd)
                nextID += 1
                clients.append(accepted)
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

    /// `json` (an object) with `"id":ID` first when the request had one.
    private static func withID(_ json: String, _ id: String?) -> String {
        guard let id else { return json }
        return "{\"id\":\(id)," + json.dropFirst()
    }

    private func reply(_ c: Client, _ json: String, id: String?) {
        lock.withLock { sendLocked(c, Self.withID(json, id)) }
    }

    private func handle(_ line: String, from c: Client) {
        guard let session else { return }
        if line.allSatisfy({ $0 == " " || $0 == "\r" || $0 == "\t" }) { return }
        let request: ControlRequest
        switch ControlCommand.parseRequest(line) {
        case .success(let r): request = r
        case .failure(let e):
            reply(c, "{\"ok\":false,\"error\":\(FlatJSON.quote(e.message))}", id: e.id)
            return
        }
        let id = request.id
        switch request.command {
        case .stats:
            let snap = session.stats.snapshot()
            let report = StatsReport(snap, previous: previousStats, startNs: startNs, state: session.statusText,
                                     latencyMs: session.videoLatencyMs)
            previousStats = snap
            reply(c, report.json, id: id)
        case .keyframe:
            session.requestKeyframe()
            reply(c, "{\"ok\":true}", id: id)
        case .setBitrate(let kbps):
            reply(c, session.setVideoBitrate(kbps: kbps) ? "{\"ok\":true,\"kbps\":\(kbps)}"
                                                         : "{\"ok\":false,\"error\":\"no video to set a bitrate on\"}", id: id)
            publishCounterEvents()
        case .stop:
            reply(c, "{\"ok\":true}", id: id)
            onStop?()
        case .version:
            reply(c, "{\"ok\":true,\"protocol\":\(Self.protocolVersion),\"version\":\(FlatJSON.quote(versionText))}", id: id)
        case .subscribe:
            let ok: Bool = lock.withLock {
                guard clients.filter({ $0.subscribed }).count < Self.maxClients - 1 else { return false }
                c.subscribed = true
                return true
            }
            reply(c, ok ? "{\"ok\":true,\"subscribed\":true}"
                        : "{\"ok\":false,\"error\":\"too many subscribers (\(Self.maxClients - 1)); one slot stays free for commands\"}",
                  id: id)
            // A subscriber that arrives once the stream is live learns so at once.
            if ok && session.state == .running, let started = Self.eventJSON(.started(session.destinationNames)) {
                reply(c, started, id: nil)
            }
        case .saveReplay(let seconds, let path):
            let clientID = c.id
            session.saveReplay(to: path, seconds: seconds) { [self] result in
                let json: String
                switch result {
                case .success(let clip):
                    json = "{\"ok\":true,\(Self.clipJSON(clip))}"
                    publish("{\"event\":\"replay-saved\",\(Self.clipJSON(clip))}")
                case .failure(let e): json = "{\"ok\":false,\"error\":\(FlatJSON.quote(e.description))}"
                }
                lock.withLock {
                    if let c = clients.first(where: { $0.id == clientID && !$0.dead }) { sendLocked(c, Self.withID(json, id)) }
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
