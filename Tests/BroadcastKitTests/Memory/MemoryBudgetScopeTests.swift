import Glibc
import Testing
@testable import BroadcastKit
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastFLV
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording
import BroadcastTestSupport

/// Issue 39: an embedded session's budget is its own memory, not the host's RSS.
@Suite(.timeLimit(.minutes(2))) struct MemoryBudgetScopeTests {
    func config(_ scope: MemoryBudgetScope) -> BroadcastConfiguration {
        var c = BroadcastConfiguration.default
        c.video = VideoEncoderSettings(width: 320, height: 180, fps: 30, bitrateKbps: 300)
        c.destinations = [.discard]
        c.memoryBudgetBytes = 50 << 20
        c.memoryBudgetScope = scope
        c.memoryBudgetScopeSource = "test"
        return c
    }

    func plan(_ baseline: Int, scope: MemoryBudgetScope) -> MemoryPlan {
        var p = MemoryPlan(budgetBytes: 50 << 20, baselineBytes: baseline, videoEncoderBytes: 3 << 20, audioEncoderBytes: 1 << 20,
                           framePoolBytes: 1 << 20, audioBytes: 1 << 20, stagingBytes: 1 << 20, queueBytes: 2 << 20)
        p.budgetScope = scope
        p.budgetScopeSource = "test"
        p.hostBytesAtPrepare = 56 << 20
        return p
    }

    @Test func aSessionScopedPlanChargesNoBaselineAndSaysWhy() {
        let s = plan(0, scope: .session)
        #expect(!s.lines.contains { $0.key == "runtime_baseline" })
        #expect(s.totalBytes == s.lines.reduce(0) { $0 + $1.bytes })
        #expect(s.description.contains("  budget scope                       session: the session's own memory, measured as growth "
                                       + "from prepare (test); the host held 56.0 MB at prepare, not charged"))
        #expect(s.json.contains("\"budget_scope\":\"session\",\"budget_scope_source\":\"test\",\"host_bytes_at_prepare\":\(56 << 20)"))
        let p = plan(56 << 20, scope: .process)
        #expect(p.lines.first == MemoryPlan.Line(key: "runtime_baseline", label: "runtime baseline (measured)", bytes: 56 << 20))
        #expect(p.totalBytes == s.totalBytes + (56 << 20))
        #expect(p.description.contains("budget scope                       process: the whole process's resident memory"))
        #expect(s.fits && !p.fits)
    }

    @Test func aCgroupLimitCapsASessionBudgetBesideTheHost() {
        let budget = MemoryBudget(bytes: 50 << 20, source: "default")
        #expect(MemoryBudget.sessionScoped(budget, hostBytes: 60 << 20, cgroup: nil) == budget)
        let roomy = CgroupMemoryLimit(version: 2, limitBytes: 512 << 20, file: "/sys/fs/cgroup/x/memory.max")
        #expect(MemoryBudget.sessionScoped(budget, hostBytes: 60 << 20, cgroup: roomy) == budget)
        let tight = CgroupMemoryLimit(version: 2, limitBytes: 100 << 20, file: "/sys/fs/cgroup/x/memory.max")
        let capped = MemoryBudget.sessionScoped(budget, hostBytes: 60 << 20, cgroup: tight, recordings: 1)
        #expect(capped.bytes == (100 << 20) - (60 << 20) - MemoryBudget.headroom(recordings: 1))
        #expect(capped.source.hasPrefix("cgroup v2 limit 100.0 MB (/sys/fs/cgroup/x/memory.max) less the host's 60.0 MB at prepare"))
        // A disabled budget stays disabled; a host over the limit leaves no room at all.
        #expect(MemoryBudget.sessionScoped(MemoryBudget(bytes: 0, source: "off"), hostBytes: 0, cgroup: tight).bytes == 0)
        #expect(MemoryBudget.sessionScoped(budget, hostBytes: 200 << 20, cgroup: tight).bytes == 0)
    }

    @Test func anOpensCostIsTheLargestSeenInTheProcess() {
        let kind = "test kind \(UInt64.random(in: 0...UInt64.max))"
        #expect(MeasuredOpenCost.charge(kind, measured: 5 << 20) == 5 << 20)
        #expect(MeasuredOpenCost.charge(kind, measured: 0) == 5 << 20)
        #expect(MeasuredOpenCost.charge(kind, measured: -1) == 5 << 20)
        #expect(MeasuredOpenCost.charge(kind, measured: 6 << 20) == 6 << 20)
        var a = VideoEncoderSettings(width: 640, height: 360, fps: 30, bitrateKbps: 800)
        let b = { var s = a; s.bitrateKbps = 2000; s.maxBitrateKbps = 2000; return s }()
        #expect(MeasuredOpenCost.x264Kind(a) == MeasuredOpenCost.x264Kind(b))
        a.preset = "ultrafast"
        #expect(MeasuredOpenCost.x264Kind(a) != MeasuredOpenCost.x264Kind(b))
    }

    /// The host's memory (here 48 MB the test touches before preparing) is in a process-scoped
    /// plan and not in a session-scoped one; a second session plans its opens no smaller.
    @Test func hostMemoryIsNotTheSessions() throws {
        let hostBytes = 48 << 20
        let host = try #require(malloc(hostBytes))
        defer { free(host) }
        memset(host, 1, hostBytes)
        let session = try PipelineAssembler.assemble(config(.session), stats: BroadcastStats()).plan
        #expect(session.baselineBytes == 0)
        #expect(session.hostBytesAtPrepare >= hostBytes)
        #expect(!session.lines.contains { $0.key == "runtime_baseline" })
        #expect(session.totalBytes < 40 << 20)
        #expect(session.fits)
        let process = try PipelineAssembler.assemble(config(.process), stats: BroadcastStats()).plan
        #expect(process.baselineBytes >= hostBytes)
        #expect(!process.fits)
        let again = try PipelineAssembler.assemble(config(.session), stats: BroadcastStats()).plan
        #expect(again.videoEncoderBytes >= session.videoEncoderBytes)
        #expect(again.audioEncoderBytes >= session.audioEncoderBytes)
        #expect(again.sessionCodeBytes >= session.sessionCodeBytes)
    }
}
