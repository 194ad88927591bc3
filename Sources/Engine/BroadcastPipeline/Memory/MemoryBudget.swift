import BroadcastCore

/// How many bytes the session may hold resident, and where that number came from.
///
/// Without an explicit budget it is the smaller of 50 MB and the process's cgroup limit less what
/// the cgroup charges besides the pages the plan counts, as the Go and JVM runtimes size their
/// heaps: in a container, the pod's limit is the contract.
///
/// What the cgroup charges besides our resident pages, measured (v1, 1080p test source and a
/// 3840x2160 PipeWire desktop → 1080p, `scripts/bench --sections cgroup`, BENCHMARKS.md):
/// - kernel memory (thread stacks, page tables, slab): `memory.kmem.max_usage_in_bytes` at most
///   0.60 MB at 1080p from the test source and 0.92 MB for the 4K desktop (PipeWire's threads and
///   sockets), warm or cold page cache; `kernelReserveBytes` keeps 1.5 MB for it (v2 also charges
///   socket buffers: the RTMP socket's SO_SNDBUF is 64 KB, doubled by the kernel);
/// - dirty page cache of a recording: each file sink syncs and drops its pages every 4 MB
///   (`recordingDirtyBytes` per recording), and dirty pages cannot be reclaimed before writeback;
/// - clean page cache (the binary and libraries read from disk: up to 15 MB with a cold cache) is
///   not reserved: the kernel reclaims it at the limit (cold-cache 1080p runs in 50 MiB hit the
///   limit 733 and 1205 times, reclaimed, and were never OOM-killed). Pages that are mapped count as RSS,
///   and the plan's baseline has them.
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

    /// Kernel memory a cgroup charges for the process (stacks, page tables, slab), measured at
    /// most 0.92 MB; see the type's notes.
    public static let kernelReserveBytes = 3 << 19

    /// Dirty page cache one recording may hold before its sink syncs and drops it
    /// (`FLVFileSink.dropCacheInterval`, `MP4FragmentWriter.dropCacheInterval`).
    public static let recordingDirtyBytes = 4 << 20

    /// What a cgroup limit leaves for the budget: what the cgroup charges besides our pages.
    public static func headroom(recordings: Int = 0) -> Int {
        kernelReserveBytes + max(0, recordings) * recordingDirtyBytes
    }

    /// `explicit` (from `--memory-budget` or the embedder) wins; otherwise the default, lowered
    /// to the cgroup limit less `headroom(recordings:)` when that is smaller. `recordings`: the
    /// session's file destinations.
    public static func resolve(explicit: Int?, cgroup: CgroupMemoryLimit? = CgroupMemoryLimit.current(),
                               recordings: Int = 0) -> MemoryBudget {
        if let e = explicit { return MemoryBudget(bytes: e, source: "--memory-budget") }
        if let c = cgroup {
            let reserve = headroom(recordings: recordings)
            let usable = max(0, c.limitBytes - reserve)
            if usable < defaultBytes {
                let mb = MemoryPlan.megabytes
                var why = "kernel memory \(mb(kernelReserveBytes))"
                if recordings > 0 { why += " + \(recordings) recording\(recordings == 1 ? "" : "s") x \(mb(recordingDirtyBytes)) dirty page cache" }
                return MemoryBudget(bytes: usable, source: "cgroup v\(c.version) limit \(mb(c.limitBytes))"
                                        + " (\(c.file)) less \(mb(reserve)) the cgroup charges besides our pages (\(why))")
            }
        }
        return MemoryBudget(bytes: defaultBytes, source: "default")
    }

    /// The budget a session-scoped plan applies: `budget`, lowered when the memory cgroup leaves
    /// less room than that beside what the host holds (`hostBytes`, its RSS at prepare) and what
    /// the cgroup charges besides our pages. The kernel enforces the limit on the whole process,
    /// so it caps a session's budget as it caps a process's. A disabled budget (0) stays disabled.
    public static func sessionScoped(_ budget: MemoryBudget, hostBytes: Int,
                                     cgroup: CgroupMemoryLimit? = CgroupMemoryLimit.current(),
                                     recordings: Int = 0) -> MemoryBudget {
        guard budget.bytes > 0, let c = cgroup else { return budget }
        let reserve = headroom(recordings: recordings)
        let room = max(0, c.limitBytes - reserve - max(0, hostBytes))
        guard room < budget.bytes else { return budget }
        let mb = MemoryPlan.megabytes
        return MemoryBudget(bytes: room, source: "cgroup v\(c.version) limit \(mb(c.limitBytes)) (\(c.file)) less the host's "
                                + "\(mb(hostBytes)) at prepare and \(mb(reserve)) the cgroup charges besides our pages"
                                + " (below \(budget.source) \(mb(budget.bytes)))")
    }

    public var description: String { "\(MemoryPlan.megabytes(bytes)) (\(source))" }
}
