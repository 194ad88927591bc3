#if canImport(Glibc)
import Glibc
#endif

/// Overwrites the stream key in this process's argv, so /proc/PID/cmdline and `ps` stop showing
/// it once parsing is done (it was visible until then; hence the warning), and in its
/// environment block, so /proc/PID/environ stops showing `$STREAM_KEY`.
public enum SecretScrubber {
    /// Copies the named variables out of the environment; for each name in `secret`, then
    /// overwrites the value's bytes in place with `*` and unsets it. /proc/PID/environ reads the
    /// block the kernel set up at exec, which unsetenv alone leaves untouched. Call it before any
    /// thread starts; the value was readable there from exec until this call.
    public static func takeEnvironment(_ names: [String], secret: Set<String>) -> [String: String] {
        var values: [String: String] = [:]
        for name in names {
            guard let p = getenv(name) else { continue }
            values[name] = String(cString: p)
            if secret.contains(name) {
                memset(p, 0x2A, strlen(p))
                unsetenv(name)
            }
        }
        return values
    }

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
        // The line ends at the first CR or LF byte (a String split would see CR LF as one
        // Character equal to neither, and keep both in the key).
        let end = bytes[0..<n].firstIndex(where: { $0 == 0x0A || $0 == 0x0D }) ?? n
        let key = String(decoding: bytes[0..<end], as: UTF8.self).trimmingCharacters(in: " \t")
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
