#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// Overwrites the stream key in this process's argv (`--key`, and a key or query inside `--url`),
/// so /proc/PID/cmdline and `ps` stop showing it once parsing is done (it was visible until
/// then; hence the warning), and in its environment block, so /proc/PID/environ stops showing
/// `$STREAM_KEY` and `$BROADCAST_URL`.
package enum SecretScrubber {
    /// Copies the named variables out of the environment; for each name in `secret`, then
    /// overwrites the value's bytes in place with `*` and unsets it. /proc/PID/environ reads the
    /// block the kernel set up at exec, which unsetenv alone leaves untouched. Call it before any
    /// thread starts; the value was readable there from exec until this call.
    package static func takeEnvironment(_ names: [String], secret: Set<String>) -> [String: String] {
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
        scrubArgv(CommandLine.unsafeArgv, count: Int(CommandLine.argc), key: key, urlKeys: [])
    }

    /// Overwrites every secret the options carry on the command line: the `--key` value, and in
    /// each `--url` value the key at the end of its path and the query of its application part
    /// (`?token=...`). Call it right after parsing; the values were readable until then.
    package static func scrubArgv(_ o: CommandLineOptions) {
        scrubArgv(CommandLine.unsafeArgv, count: Int(CommandLine.argc), key: o.keyFromArgv,
                  urlKeys: o.urls.map(\.url))
    }

    /// The warning for keys given on the command line, or nil when none was (or with `--quiet`).
    package static func argvWarning(_ o: CommandLineOptions) -> String? {
        guard !o.quiet else { return nil }
        let inURL = o.urls.contains { urlSecretRange($0.url) != nil }
        if o.keyFromArgv != nil {
            return "warning: --key on the command line is readable by local users (ps, /proc); prefer $STREAM_KEY or --key-file"
        }
        guard inURL else { return nil }
        return "warning: a stream key or token in --url on the command line is readable by local users (ps, /proc); "
            + "prefer $STREAM_KEY, --key-file or --url URL,key-file=PATH"
    }

    /// The byte range of `url` that is secret: from the key at the end of its path (or the
    /// query of its application, whichever starts first) to the end; nil when it holds neither.
    static func urlSecretRange(_ url: String) -> Range<Int>? {
        guard let parsed = try? RTMPURL(parsing: url) else { return nil }
        let bytes = Array(url.utf8)
        var start = bytes.count
        if let key = parsed.streamKey { start = bytes.count - key.utf8.count }
        // A query in the application part ("live?token=...") counts as a secret too.
        if let scheme = bytes.firstIndex(of: UInt8(ascii: ":")), let q = bytes[scheme...].firstIndex(of: UInt8(ascii: "?")) {
            start = min(start, q + 1)
        }
        return start < bytes.count ? start..<bytes.count : nil
    }

    /// The work of `scrubArgv`, on any argv-shaped block (tests pass their own).
    static func scrubArgv(_ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>, count argc: Int,
                          key: String?, urlKeys urls: [String]) {
        func star(_ p: UnsafeMutablePointer<CChar>, from: Int, count: Int) {
            guard count > 0, from >= 0, from + count <= strlen(p) else { return }
            memset(p + from, 0x2A, count)   // '*'
        }
        var i = 1
        while i < argc {
            defer { i += 1 }
            guard let p = argv[i] else { continue }
            let s = String(cString: p)
            for (name, isURL) in [("--key", false), ("--url", true)] {
                let valueAt: (UnsafeMutablePointer<CChar>, Int)?
                if s == name, i + 1 < argc, let next = argv[i + 1] {
                    valueAt = (next, 0)
                } else if s.hasPrefix(name + "=") {
                    valueAt = (p, name.utf8.count + 1)
                } else {
                    valueAt = nil
                }
                guard let (q, offset) = valueAt else { continue }
                let value = String(cString: q + offset)
                if !isURL {
                    if let key, value == key { star(q, from: offset, count: key.utf8.count) }
                    continue
                }
                // The value is URL[,key-file=...][,service=...]: the URL is what parsing kept.
                for url in urls where value == url || value.hasPrefix(url + ",") {
                    if let r = urlSecretRange(url) { star(q, from: offset + r.lowerBound, count: r.count) }
                    break
                }
            }
        }
    }

    /// Reads a key file's key under `KeyFile`'s rules.
    static func readKeyFile(_ path: String, option: String = "--key-file") throws(UsageError) -> String {
        try KeyFile.read(path, option: option)
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
