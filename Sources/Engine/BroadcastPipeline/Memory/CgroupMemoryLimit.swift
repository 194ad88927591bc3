#if canImport(Glibc)
import Glibc
import BroadcastCore
#endif

/// The memory limit of the cgroup this process runs in: a container's `--memory`, a Kubernetes
/// pod's limit, a systemd unit's `MemoryMax`.
///
/// Reads `/proc/self/cgroup` to find our group, then the limit file of that group and of every
/// ancestor up to the root (the tightest one is what the kernel enforces): cgroup v2
/// `memory.max` (pure v2 at `/sys/fs/cgroup`, or the hybrid layout's `/sys/fs/cgroup/unified`),
/// or v1 `memory.limit_in_bytes` under the memory controller. Inside a container the group path
/// may not exist in the container's view; then the mount's root files are the container's own.
public struct CgroupMemoryLimit: Sendable, Equatable {
    /// 1 or 2.
    public var version: Int
    public var limitBytes: Int
    /// The file the limit was read from.
    public var file: String

    public init(version: Int, limitBytes: Int, file: String) {
        self.version = version
        self.limitBytes = limitBytes
        self.file = file
    }

    /// Values at or above this are "no limit" (v1 reports about 2^63 rounded to pages).
    static let unlimitedThreshold = Int(1) << 60

    /// The enforced limit, or nil when no memory cgroup limits this process.
    public static func current(procSelfCgroup: String = "/proc/self/cgroup", root: String = "/sys/fs/cgroup")
        -> CgroupMemoryLimit? {
        guard let text = readSmallFile(procSelfCgroup) else { return nil }
        var v1Path: String?, v2Path: String?
        for line in text.split(separator: "\n") {
            // "hierarchy-id:controllers:path"; the path may itself hold colons.
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            if parts[0] == "0" && parts[1].isEmpty { v2Path = String(parts[2]) }
            if parts[1].split(separator: ",").contains("memory") { v1Path = String(parts[2]) }
        }
        var found: [CgroupMemoryLimit] = []
        if let p = v1Path { found += limits(under: root + "/memory", path: p, file: "memory.limit_in_bytes", version: 1) }
        if let p = v2Path {
            for mount in [root, root + "/unified"] {
                found += limits(under: mount, path: p, file: "memory.max", version: 2)
            }
        }
        return found.min { $0.limitBytes < $1.limitBytes }
    }

    /// Limits of the group at `path` and each ancestor, below `mount`; unlimited ones are skipped.
    static func limits(under mount: String, path: String, file: String, version: Int) -> [CgroupMemoryLimit] {
        var out: [CgroupMemoryLimit] = []
        var components = path.split(separator: "/").map(String.init)
        while true {
            let dir = components.isEmpty ? mount : mount + "/" + components.joined(separator: "/")
            let f = dir + "/" + file
            if let text = readSmallFile(f), let bytes = parseLimit(text), bytes < unlimitedThreshold {
                out.append(CgroupMemoryLimit(version: version, limitBytes: bytes, file: f))
            }
            if components.isEmpty { break }
            components.removeLast()
        }
        return out
    }

    /// "max\n" (v2: none) or a byte count.
    static func parseLimit(_ text: String) -> Int? {
        let t = text.split(whereSeparator: { $0 == "\n" || $0 == " " }).first.map(String.init) ?? ""
        if t == "max" { return Int.max }
        return Int(t)
    }

    /// The first 4 KB of a small text file (cgroup and proc files), or nil.
    static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 4096) { buf -> String? in
            var len = 0
            while len < buf.count {
                let n = read(fd, buf.baseAddress! + len, buf.count - len)
                if n <= 0 { break }
                len += n
            }
            return String(decoding: UnsafeBufferPointer(rebasing: buf[0..<len]), as: UTF8.self)
        }
    }
}
