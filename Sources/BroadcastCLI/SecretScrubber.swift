#if canImport(Glibc)
import Glibc
#endif

/// Overwrites the stream key in this process's argv, so /proc/PID/cmdline and `ps` stop showing
/// it once parsing is done (it was visible until then; hence the warning).
enum SecretScrubber {
    static func scrubArgv(value key: String) {
        guard !key.isEmpty else { return }
        let argc = Int(CommandLine.argc)
        let argv = CommandLine.unsafeArgv
        for i in 1..<argc {
            guard let p = argv[i] else { continue }
            let s = String(cString: p)
            if s == key {
                memset(p, 0x2A, strlen(p))        // '*'
            } else if s.hasPrefix("--key="), String(s.dropFirst(6)) == key {
                memset(p + 6, 0x2A, strlen(p) - 6)
            }
        }
    }

    /// Reads a key file (first line, whitespace trimmed) without Foundation.
    static func readKeyFile(_ path: String) throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw UsageError("--key-file \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let n = read(fd, &bytes, bytes.count)
        guard n > 0 else { throw UsageError("--key-file \(path): empty or unreadable") }
        let text = String(decoding: bytes[0..<n], as: UTF8.self)
        let line = text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).first.map(String.init) ?? ""
        let key = line.trimmingCharacters(in: " \t")
        guard !key.isEmpty else { throw UsageError("--key-file \(path): no key in the first line") }
        return key
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
