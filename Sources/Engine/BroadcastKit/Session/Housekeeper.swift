#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording

/// The session's one periodic thread. Every 20 ms it releases audio and tags whose bounded
/// waits expired (a silent source must not hold the stream back) and reports destination
/// failures, and lets the bitrate controller watch a probe's queue; once a second it samples the
/// primary queue into the stats and lets the bitrate controller decide.
final class Housekeeper: @unchecked Sendable {
    private let pipeline: Pipeline
    private let stats: BroadcastStats
    private let bitrate: BitrateController?
    private let reportFailures: () -> Void
    private let thread = WorkerThread(name: "bk-housekeep")
    private let stopping = Atomic<Bool>(false)
    private static let tickNs: Int = 20_000_000

    init(pipeline: Pipeline, stats: BroadcastStats, bitrate: BitrateController?,
                 reportFailures: @escaping () -> Void) {
        self.pipeline = pipeline
        self.stats = stats
        self.bitrate = bitrate
        self.reportFailures = reportFailures
    }

    func start() throws(WorkerThread.StartFailure) { try thread.start { [self] in run() } }

    func stop() {
        stopping.store(true, ordering: .releasing)
        thread.join()
    }

    private func run() {
        var nextSecond = MediaTime.now() + MediaTime.nanosPerSecond
        while !stopping.load(ordering: .acquiring) {
            var ts = timespec(tv_sec: 0, tv_nsec: Self.tickNs)
            nanosleep(&ts, nil)
            let now = MediaTime.now()
            pipeline.mixer?.poll(nowNs: now)
            pipeline.interleaver.poll(nowNs: now)
            reportFailures()
            bitrate?.watch(nowNs: now)
            if now >= nextSecond {
                nextSecond += MediaTime.nanosPerSecond
                if let primary = pipeline.destinations.primary {
                    let bytes = primary.queue.queuedBytes, ms = primary.queue.queuedDurationMs
                    stats.update { $0.queueBytes = bytes; $0.queueMs = ms }
                }
                for d in pipeline.destinations.all { d.sampleRate(nowNs: now) }
                bitrate?.tick(nowNs: now)
            }
        }
    }
}
