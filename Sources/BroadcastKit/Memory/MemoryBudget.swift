/// How many bytes the session may hold resident, and where that number came from.
///
/// Without an explicit budget it is the smaller of 50 MB and the process's cgroup limit less
/// headroom, as the Go and JVM runtimes size their heaps: in a container, the pod's limit is the
/// contract. The headroom (10% of the limit, at least 4 MB) covers what the cgroup charges that
/// VmHWM does not show: page cache of written files, kernel memory for sockets and page tables.
public struct MemoryBudget: Sendable, Equatable, CustomStringConvertible {
    public var bytes: Int
    /// Where `bytes` came from, for the plan's budget line.
    public var source: String

    public init(bytes: Int, source: String) {
        self.bytes = bytes
        self.source = source
    }

    /// The budget when nothing else is said: 50 MB.
    public static let defaultBytes = 50 << 20

    /// What a cgroup limit leaves for the budget.
    public static func headroom(forLimit limit: Int) -> Int { max(4 << 20, limit / 10) }

    /// `explicit` (from `--memory-budget` or the embedder) wins; otherwise the default, lowered
    /// to the cgroup limit less headroom when that is smaller.
    public static func resolve(explicit: Int?, cgroup: CgroupMemoryLimit? = CgroupMemoryLimit.current()) -> MemoryBudget {
        if let e = explicit { return MemoryBudget(bytes: e, source: "--memory-budget") }
        if let c = cgroup {
            let usable = max(0, c.limitBytes - headroom(forLimit: c.limitBytes))
            if usable < defaultBytes {
                return MemoryBudget(bytes: usable, source: "cgroup v\(c.version) limit \(MemoryPlan.megabytes(c.limitBytes))"
                                        + " (\(c.file)) less \(MemoryPlan.megabytes(headroom(forLimit: c.limitBytes))) headroom")
            }
        }
        return MemoryBudget(bytes: defaultBytes, source: "default")
    }

    public var description: String { "\(MemoryPlan.megabytes(bytes)) (\(source))" }
}
