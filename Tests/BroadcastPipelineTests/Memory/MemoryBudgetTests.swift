import Foundation
import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(2))) struct MemoryBudgetTests {
    /// A fake /proc/self/cgroup and /sys/fs/cgroup tree in a temp directory.
    func tree(_ files: [String: String]) throws -> String {
        let dir = "/tmp/cgroup-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        for (path, text) in files {
            let url = URL(fileURLWithPath: dir + path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        return dir
    }

    @Test func v1LimitOfOwnGroupAndTightestAncestor() throws {
        let d = try tree([
            "/proc": "4:memory:/ci/job\n0::/\n",
            "/cg/memory/memory.limit_in_bytes": "9223372036854771712\n",
            "/cg/memory/ci/memory.limit_in_bytes": "41943040\n",
            "/cg/memory/ci/job/memory.limit_in_bytes": "62914560\n",
        ])
        let c = try #require(CgroupMemoryLimit.current(procSelfCgroup: d + "/proc", root: d + "/cg"))
        #expect(c.version == 1 && c.limitBytes == 40 << 20 && c.file.hasSuffix("/cg/memory/ci/memory.limit_in_bytes"))
    }

    @Test func v2MaxIsUnlimitedAndNumbersAreLimits() throws {
        let unlimited = try tree(["/proc": "0::/pod\n", "/cg/pod/memory.max": "max\n", "/cg/memory.max": "max\n"])
        #expect(CgroupMemoryLimit.current(procSelfCgroup: unlimited + "/proc", root: unlimited + "/cg") == nil)
        let limited = try tree(["/proc": "0::/pod\n", "/cg/pod/memory.max": "67108864\n"])
        let c = try #require(CgroupMemoryLimit.current(procSelfCgroup: limited + "/proc", root: limited + "/cg"))
        #expect(c.version == 2 && c.limitBytes == 64 << 20)
    }

    /// Hybrid hosts mount v2 at /sys/fs/cgroup/unified; containers see their group as the root.
    @Test func hybridUnifiedMountAndContainerRoot() throws {
        let d = try tree(["/proc": "0::/not/visible/here\n", "/cg/unified/memory.max": "52428800\n"])
        let c = try #require(CgroupMemoryLimit.current(procSelfCgroup: d + "/proc", root: d + "/cg"))
        #expect(c.limitBytes == 50 << 20 && c.file.hasSuffix("/cg/unified/memory.max"))
    }

    @Test func budgetIsTheSmallerOfDefaultAndLimitLessHeadroom() {
        let explicit = MemoryBudget.resolve(explicit: 30 << 20, cgroup: nil)
        #expect(explicit.bytes == 30 << 20 && explicit.source == "--memory-budget")
        #expect(MemoryBudget.resolve(explicit: nil, cgroup: nil) == MemoryBudget(bytes: 50 << 20, source: "default"))
        let big = CgroupMemoryLimit(version: 2, limitBytes: 1 << 30, file: "/x/memory.max")
        #expect(MemoryBudget.resolve(explicit: nil, cgroup: big).bytes == 50 << 20)
        // 50 MiB container: the measured kernel-memory reserve (1.5 MiB) leaves 48.5 MiB, and the
        // plan's budget line says what was kept and why.
        let pod = CgroupMemoryLimit(version: 1, limitBytes: 50 << 20, file: "/x/memory.limit_in_bytes")
        let b = MemoryBudget.resolve(explicit: nil, cgroup: pod)
        #expect(b.bytes == 97 << 19)
        #expect(b.source.hasPrefix("cgroup v1 limit 50.0 MB") && b.source.contains("less 1.5 MB the cgroup charges")
                && b.source.contains("kernel memory 1.5 MB") && !b.source.contains("recording"))
        // Each recording adds its dirty page cache window (4 MiB) to what the cgroup charges.
        let rec = MemoryBudget.resolve(explicit: nil, cgroup: pod, recordings: 2)
        #expect(rec.bytes == (100 - 3 - 16) << 19)
        #expect(rec.source.contains("less 9.5 MB") && rec.source.contains("2 recordings x 4.0 MB dirty page cache"))
        let tiny = CgroupMemoryLimit(version: 2, limitBytes: 24 << 20, file: "/x/memory.max")
        #expect(MemoryBudget.resolve(explicit: nil, cgroup: tiny).bytes == 45 << 19)
    }
}
