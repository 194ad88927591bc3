#if canImport(Glibc)
import Glibc
#endif
import CLinuxProcess
import BroadcastCore
import BroadcastPipeline

/// Name resolution that a stop or the operation's deadline always wins.
///
/// `getaddrinfo` blocks for as long as the DNS server lets it (glibc: its timeout times its
/// attempts, per server and per address family) and cannot be woken. A numeric address is
/// parsed on the caller's thread; a name is resolved on a short-lived detached thread, and the
/// caller waits on that lookup's pipe beside the stop's self-pipe, within the deadline. A caller
/// that gives up abandons the lookup: it finishes on its own thread and its result is dropped.
///
/// Bounded: one lookup at a time per host, port and socket type (a destination resolves one
/// name, so a reconnecting destination joins its own lookup still in progress instead of
/// starting another), and at most `maxOutstanding` lookups in the process; past that, a
/// resolution fails at once rather than growing threads.
package enum HostResolver {
    /// One resolved address: a `sockaddr` of `length` bytes in `storage`.
    package struct Address: Sendable {
        var storage = sockaddr_storage()
        var length: socklen_t = 0
        var family: Int32 { Int32(storage.ss_family) }

        /// Calls `body` with the address as a `sockaddr` pointer and its length.
        package func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
            withUnsafePointer(to: storage) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
            }
        }
    }

    /// Why a resolution gave no address.
    package enum Failure: Error, Equatable {
        /// The resolver's own answer (`gai_strerror`), or no address.
        case failed(String)
        /// The stop came first.
        case stopped
        /// The operation's deadline passed first.
        case deadlinePassed
        /// `maxOutstanding` lookups are still in progress (abandoned ones included).
        case busy
    }

    /// The most lookups in progress at once in the process.
    static let maxOutstanding = 8

    /// The addresses of `host:port` for `socketType` (SOCK_STREAM, SOCK_DGRAM), any family, in the
    /// resolver's order. Waits at most until `deadline`, and returns at once when `stop` is set.
    package static func resolve(host: String, port: Int, socketType: Int32, deadline: Deadline,
                                stop: StopFlag?) throws(Failure) -> [Address] {
        if let stop, stop.isSet { throw .stopped }
        if let numeric = numeric(host: host, port: port, socketType: socketType) { return numeric }
        let key = "\(socketType)|\(port)|\(host)"
        return try join(key: key, host: host, port: port, socketType: socketType).wait(deadline: deadline, stop: stop)
    }

    /// How many lookups are in progress now (tests).
    static var outstanding: Int { registry.withLock { $0.count } }

    /// A literal IPv4 or IPv6 address: no lookup, no thread.
    private static func numeric(host: String, port: Int, socketType: Int32) -> [Address]? {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = socketType
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0 else { return nil }
        defer { freeaddrinfo(list) }
        return copy(list)
    }

    fileprivate static func copy(_ list: UnsafeMutablePointer<addrinfo>?) -> [Address] {
        var out: [Address] = []
        var entry = list
        while let ai = entry {
            entry = ai.pointee.ai_next
            guard let sa = ai.pointee.ai_addr, Int(ai.pointee.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size else { continue }
            var a = Address()
            a.length = ai.pointee.ai_addrlen
            withUnsafeMutableBytes(of: &a.storage) { dst in
                dst.copyMemory(from: UnsafeRawBufferPointer(start: sa, count: Int(ai.pointee.ai_addrlen)))
            }
            out.append(a)
        }
        return out
    }

    /// The lookups in progress, by key.
    private static let registry = Locked<[String: Lookup]>([:])

    /// The lookup in progress for `key`, or a new one on its own thread.
    private static func join(key: String, host: String, port: Int, socketType: Int32) throws(Failure) -> Lookup {
        let result: Result<Lookup, Failure> = registry.withLock { lookups in
            if let running = lookups[key] { return .success(running) }
            guard lookups.count < maxOutstanding else { return .failure(.busy) }
            guard let lookup = Lookup(host: host, port: port, socketType: socketType) else {
                return .failure(.failed("cannot make a pipe: \(SystemError.describe())"))
            }
            guard lookup.start(key: key) else { return .failure(.failed("cannot start a resolver thread")) }
            lookups[key] = lookup
            return .success(lookup)
        }
        return try result.get()
    }

    fileprivate static func finished(key: String) {
        _ = registry.withLock { $0.removeValue(forKey: key) }
    }
}

/// One `getaddrinfo` on its own detached thread; its pipe turns readable when it is done.
private final class Lookup: Sendable {
    private let host: String
    private let port: Int
    private let socketType: Int32
    private let readFD: Int32
    private let writeFD: Int32
    private let outcome = Locked<Result<[HostResolver.Address], HostResolver.Failure>?>(nil)

    init?(host: String, port: Int, socketType: Int32) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        self.host = host
        self.port = port
        self.socketType = socketType
        readFD = fds[0]
        writeFD = fds[1]
    }

    deinit {
        _ = close(readFD)
        _ = close(writeFD)
    }

    private final class Start {
        let lookup: Lookup
        let key: String
        init(_ lookup: Lookup, _ key: String) { self.lookup = lookup; self.key = key }
    }

    /// Starts the thread (it holds the lookup until it is done). False when no thread could start.
    func start(key: String) -> Bool {
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        defer { pthread_attr_destroy(&attr) }
        pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED))
        var thread: pthread_t = 0
        let box = Unmanaged.passRetained(Start(self, key)).toOpaque()
        let rc = pthread_create(&thread, &attr, { arg in
            let start = Unmanaged<Start>.fromOpaque(arg!).takeRetainedValue()
            bk_set_thread_name("bk-resolve")
            start.lookup.run()
            HostResolver.finished(key: start.key)
            return nil
        }, box)
        if rc != 0 {
            Unmanaged<Start>.fromOpaque(box).release()
            return false
        }
        return true
    }

    private func run() {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = socketType
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        let result: Result<[HostResolver.Address], HostResolver.Failure>
        if rc != 0 {
            result = .failure(.failed(String(cString: gai_strerror(rc))))
        } else {
            let addresses = HostResolver.copy(list)
            freeaddrinfo(list)
            result = addresses.isEmpty ? .failure(.failed("no address")) : .success(addresses)
        }
        outcome.withLock { $0 = result }
        var one: UInt8 = 1
        _ = write(writeFD, &one, 1)
    }

    /// Waits for the result, the stop or the deadline, whichever comes first.
    func wait(deadline: Deadline, stop: StopFlag?) throws(HostResolver.Failure) -> [HostResolver.Address] {
        var fds = [pollfd(fd: readFD, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: stop?.wakeFD ?? -1, events: Int16(POLLIN), revents: 0)]
        while true {
            if let done = outcome.withLock({ $0 }) { return try done.get() }
            if let stop, stop.isSet { throw .stopped }
            if deadline.hasPassed { throw .deadlinePassed }
            // A wait with no deadline is still sliced, so a lost wake-up cannot hold it.
            let ms = deadline.remainingMs(cap: 1000)
            fds[0].revents = 0
            fds[1].revents = 0
            _ = poll(&fds, nfds_t(stop == nil ? 1 : 2), ms)
        }
    }
}
