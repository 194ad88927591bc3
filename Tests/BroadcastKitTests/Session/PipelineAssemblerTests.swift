import Glibc
import Synchronization
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

/// A sink that records what it was given and fails its writes when asked to.
final class ScriptedSink: TagSink, @unchecked Sendable {
    let displayName: String
    let network: Bool
    let failWrites: Bool
    let written = Mutex<[FLVTagType]>([])
    init(_ name: String, network: Bool = false, failWrites: Bool = false) {
        displayName = name
        self.network = network
        self.failWrites = failWrites
    }
    var capabilities: DestinationCapabilities { DestinationCapabilities(isNetworkPublisher: network) }
    func open() throws(TransportError) {}
    func write(_ tag: FLVTag) throws(TransportError) {
        if failWrites { throw TransportError.writeFailed("scripted failure") }
        written.withLock { $0.append(tag.type) }
    }
    func close() {}
}

/// A sink whose receiver can ask for keyframes, as WHIP's can.
final class KeyframeAskingSink: TagSink, KeyframeRequesting, @unchecked Sendable {
    let displayName = "asks for keyframes"
    var keyframeRequester: (@Sendable () -> Void)?
    func open() throws(TransportError) {}
    func write(_ tag: FLVTag) throws(TransportError) {}
    func close() {}
}

@Suite(.timeLimit(.minutes(5))) struct PipelineAssemblerTests {
    func config(_ destinations: [DestinationSettings], video: Bool = true, audio: Bool = true) -> BroadcastConfiguration {
        var c = BroadcastConfiguration.default
        c.video = VideoEncoderSettings(width: 320, height: 180, fps: 30, bitrateKbps: 300)
        c.hasVideo = video
        c.hasAudio = audio
        c.destinations = destinations
        // The test process's own RSS (other suites run in parallel) is no budget question here.
        c.memoryBudgetBytes = 0
        return c
    }

    @Test func networkPublisherBecomesPrimaryWhateverTheOrder() throws {
        let file = ScriptedSink("file"), net = ScriptedSink("net", network: true)
        let p = try PipelineAssembler.assemble(config([.custom(file), .custom(net)]), stats: BroadcastStats())
        #expect(p.destinations.names == ["net", "file"])
        #expect(p.destinations.primary?.isPrimary == true)
        #expect(p.destinations.all.filter(\.isPrimary).count == 1)
    }

    @Test func buildsOneLanePerBufferTypeAndPlansWhatItAllocated() throws {
        let p = try PipelineAssembler.assemble(config([.discard]), stats: BroadcastStats())
        #expect(p.videoLane != nil && p.videoEncoder != nil)
        #expect(p.audioLane(.appAudio)?.lane == .appAudio)
        #expect(p.audioLane(.micAudio)?.lane == .micAudio)
        #expect(p.audioLane(.video) == nil)
        #expect(p.plan.stagingBytes == p.interleaver.reservedBytes)
        #expect(p.plan.queueBytes == p.destinations.all.reduce(0) { $0 + $1.queue.reservedBytes })
        #expect(p.plan.framePoolBytes == FramePool.byteCount(width: 320, height: 180, capacity: 2))
        #expect(p.plan.fits)
    }

    /// Issue 23: a session whose audio is known to be 48 kHz reserves no resampler, and the plan's
    /// audio line says so (before, it planned 2 x 0.9 MB that a 48 kHz run never touches).
    @Test func fortyEightKilohertzAudioPlansNoResampler() throws {
        let with = try PipelineAssembler.assemble(config([.discard], video: false), stats: BroadcastStats())
        var c = config([.discard], video: false)
        c.audioMayNeedResampling = false
        let without = try PipelineAssembler.assemble(c, stats: BroadcastStats())
        #expect(with.plan.audioBytes - without.plan.audioBytes == 2 * Resampler.reservedBytes)
        #expect(without.plan.audioBytes == (without.mixer?.reservedBytes ?? 0) + without.audioLanes.reduce(0) { $0 + $1.reservedBytes })
    }

    /// A destination that can ask for keyframes is handed the video lane's request, whatever its
    /// type: asking makes the lane's next frame an IDR. Without video there is nothing to ask.
    @Test func aKeyframeRequestingSinkReachesTheVideoLane() throws {
        let sink = KeyframeAskingSink(), plain = ScriptedSink("plain")
        let p = try PipelineAssembler.assemble(config([.custom(plain), .custom(sink)]), stats: BroadcastStats())
        let lane = try #require(p.videoLane)
        #expect(!lane.keyframeRequestPending)
        let ask = try #require(sink.keyframeRequester, "the sink was not handed the lane's request")
        ask()
        #expect(lane.keyframeRequestPending)
        let audioOnly = KeyframeAskingSink()
        _ = try PipelineAssembler.assemble(config([.custom(audioOnly)], video: false), stats: BroadcastStats())
        #expect(audioOnly.keyframeRequester == nil)
    }

    @Test func audioOnlyHasNoVideoStage() throws {
        let p = try PipelineAssembler.assemble(config([.discard], video: false), stats: BroadcastStats())
        #expect(p.videoLane == nil && p.videoEncoder == nil && p.plan.framePoolBytes == 0)
        #expect(p.mixer != nil && p.audioLanes.count == 2)
    }

    @Test func refusesNothingToBroadcast() {
        do {
            _ = try PipelineAssembler.assemble(config([.discard], video: false, audio: false), stats: BroadcastStats())
            Issue.record("assembled a pipeline with neither video nor audio")
        } catch {
            #expect(error == .configuration("nothing to broadcast: video and audio are both off"))
        }
    }

    @Test func headersComeMetadataThenVideoThenAudio() throws {
        let p = try PipelineAssembler.assemble(config([.discard]), stats: BroadcastStats())
        let c = config([.discard])
        let headers = StreamHeaders(video: c.video, audio: c.audio, encoderName: c.encoderName,
                                    videoEncoder: p.videoEncoder, audioEncoder: p.audioEncoder)
        var seen: [(FLVTagType, Bool)] = []
        headers.forEach { seen.append(($0.flvTagType, $0.isConfig)) }
        #expect(seen.map(\.0) == [.scriptData, .video, .audio])
        #expect(seen.allSatisfy { $0.1 })
    }

    /// The primary's failure stops the session; another destination's failure is a warning, once.
    @Test func destinationFailuresAreReportedOnceWithTheirWeight() throws {
        let stats = BroadcastStats()
        let primary = Destination(sink: FLVTagSinkAdapter(ScriptedSink("primary", failWrites: true)), policy: .default, isPrimary: true,
                                  stats: stats)
        let other = Destination(sink: FLVTagSinkAdapter(ScriptedSink("copy", failWrites: true)), policy: .default, isPrimary: false,
                                stats: stats)
        let set = DestinationSet([primary, other])
        for d in set.all { try d.open() }
        let body: [UInt8] = [0xAF, 0x01, 0x00]
        body.withUnsafeBytes { set.push(FLVTag(type: .audio, timestampMs: 0, body: $0).packet, at: .interleaved) }
        let deadline = MediaTime.now() + 2_000_000_000
        while set.all.contains(where: { $0.state != .failed }) && MediaTime.now() < deadline {
            var ts = timespec(tv_sec: 0, tv_nsec: 5_000_000)
            nanosleep(&ts, nil)
        }
        var events: [String] = [], failures: [BroadcastError] = []
        for _ in 0..<2 {
            set.reportNewFailures(onEvent: { e in
                switch e {
                case .failed(let m): events.append("failed: \(m)")
                case .warning(let m): events.append("warning: \(m)")
                default: events.append("other")
                }
            }, onFailure: { failures.append($0) })
        }
        #expect(events.count == 2)
        #expect(events.contains { $0.hasPrefix("failed: primary: write failed") })
        #expect(events.contains { $0.hasPrefix("warning: copy: write failed") && $0.hasSuffix("streaming continues without it") })
        #expect(failures == [.streaming("primary: write failed: scripted failure")])
        for d in set.all { d.finish(deadlineNs: MediaTime.now()) }
    }

    /// With network publishers, losing one is a warning while another delivers, losing the last
    /// fails the run, and a recording's loss is never fatal; `requireAll` makes any loss fatal.
    @Test(arguments: [false, true])
    func networkDestinationsFailTogether(requireAll: Bool) throws {
        let stats = BroadcastStats()
        let a = Destination(sink: FLVTagSinkAdapter(ScriptedSink("a", network: true, failWrites: true)), policy: .default, isPrimary: true,
                            stats: stats)
        let b = Destination(sink: FLVTagSinkAdapter(ScriptedSink("b", network: true)), policy: .default, isPrimary: false, stats: stats)
        let rec = Destination(sink: FLVTagSinkAdapter(ScriptedSink("rec", failWrites: true)), policy: .default, isPrimary: false, stats: stats)
        let set = DestinationSet([a, b, rec], requireAll: requireAll)
        for d in set.all { try d.open() }
        let body: [UInt8] = [0xAF, 0x01, 0x00]
        body.withUnsafeBytes { set.push(FLVTag(type: .audio, timestampMs: 0, body: $0).packet, at: .interleaved) }
        let deadline = MediaTime.now() + 2_000_000_000
        while (a.state != .failed || rec.state != .failed) && MediaTime.now() < deadline {
            var ts = timespec(tv_sec: 0, tv_nsec: 5_000_000)
            nanosleep(&ts, nil)
        }
        var warnings = 0, failures: [BroadcastError] = []
        set.reportNewFailures(onEvent: { if case .warning = $0 { warnings += 1 } }, onFailure: { failures.append($0) })
        #expect(b.state == .live)
        if requireAll {
            #expect(failures.count == 2 && warnings == 0)
        } else {
            #expect(failures.isEmpty && warnings == 2)
            #expect(set.stats.map(\.state) == ["failed", "live", "failed"])
            #expect(set.stats[0].downtimeSeconds >= 0 && set.stats[0].kind == "custom")
        }
        for d in set.all { d.finish(deadlineNs: MediaTime.now()) }
    }

    /// Every destination has its own queue, and the memory plan counts each one.
    @Test func memoryPlanCountsEveryDestinationsQueue() throws {
        let one = try PipelineAssembler.assemble(config([.discard]), stats: BroadcastStats())
        let three = try PipelineAssembler.assemble(config([.discard, .discard, .discard]), stats: BroadcastStats())
        let queues = three.destinations.all.map { ObjectIdentifier($0.queue) }
        #expect(Set(queues).count == 3)
        #expect(three.plan.queueBytes == three.destinations.all.reduce(0) { $0 + $1.queue.reservedBytes })
        #expect(three.plan.queueBytes == 3 * one.plan.queueBytes)
    }
}
