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

/// Issue 41: each destination says what it is (`DestinationCapabilities`), whether it reports on
/// its link (`LinkFeedback`), and what it holds (its own memory-plan lines), in place of the ten
/// optional properties `TagSink` had grown.
@Suite(.timeLimit(.minutes(2))) struct DestinationCapabilitiesTests {
    static let video = VideoEncoderSettings(width: 320, height: 180, fps: 30, bitrateKbps: 300)

    func destination(_ sink: any DestinationSink) -> Destination {
        Destination(sink: (sink as? PacketSink) ?? FLVTagSinkAdapter(sink as! TagSink), policy: .default, isPrimary: false,
                    stats: BroadcastStats())
    }

    @Test func eachBuiltInSinkStatesWhatItIs() {
        let rtmp = destination(RTMPPublisher(url: "rtmp://127.0.0.1:1/live", streamKey: "k"))
        #expect(rtmp.capabilities == DestinationCapabilities(isNetworkPublisher: true))
        #expect(rtmp.feedback != nil)

        let srt = destination(SRTPublisher(url: "srt://127.0.0.1:1", streamKey: "", passphrase: nil, hasVideo: true,
                                           audio: AudioEncoderSettings(), maxBitrateKbps: 3000, connectTimeoutSeconds: 1))
        #expect(srt.capabilities == DestinationCapabilities(isNetworkPublisher: true, needsRealTimeInput: true))
        #expect(srt.feedback != nil)

        let whip = destination(WHIPPublisher(url: "http://127.0.0.1:1/whip", token: "", hasVideo: true, hasAudio: true,
                                             connectTimeoutSeconds: 1, caFile: nil))
        #expect(whip.capabilities == DestinationCapabilities(isNetworkPublisher: true, stage: .encoded,
                                                             needsRealTimeInput: true))
        #expect(whip.feedback != nil)

        // AAC primes (its delay goes under the MP4 edit list); Opus's pre-skip is in its header.
        let mp4AAC = destination(MP4FileSink(path: "/nonexistent/r.mp4", video: Self.video, audio: AudioEncoderSettings(),
                                             audioDelaySamples: 2048))
        #expect(mp4AAC.capabilities == DestinationCapabilities(takesPriming: true))
        #expect(mp4AAC.feedback == nil)
        for sink: any DestinationSink in [FLVFileSink(path: "/nonexistent/r.flv"), DiscardSink(), ScriptedSink("embedder's own")] {
            #expect(destination(sink).capabilities == .recording, "\(sink.displayName)")
            #expect(destination(sink).feedback == nil, "\(sink.displayName)")
        }
    }

    @Test func linesOfOneKeyAddUpAndAOnceLineCountsOnce() {
        typealias Line = MemoryPlan.Line
        let merged = MemoryPlan.merged([
            Line(key: "a", label: "A", bytes: 10),
            Line(key: "lib", label: "L", bytes: 100, once: true),
            Line(key: "a", label: "A", bytes: 5),
            Line(key: "lib", label: "L", bytes: 100, once: true),
            Line(key: "lib", label: "L", bytes: 1),
            Line(key: "lib", label: "L", bytes: 120, once: true),
        ])
        #expect(merged == [Line(key: "a", label: "A", bytes: 15), Line(key: "lib", label: "L", bytes: 121)])
    }

    /// A sink the embedder supplies, with a buffer of its own to declare.
    final class BufferedSink: TagSink, @unchecked Sendable {
        var displayName: String { "relay" }
        var memoryPlanLines: [MemoryPlan.Line] { [MemoryPlan.Line(key: "relay", label: "in-process relay", bytes: 3 << 20)] }
        func open() throws(TransportError) {}
        func write(_ tag: FLVTag) throws(TransportError) {}
        func close() {}
    }

    @Test func thePlanCarriesEachDestinationsOwnLines() throws {
        var c = BroadcastConfiguration.default
        c.video = Self.video
        c.audio.codec = .opus  // WHIP needs Opus
        c.memoryBudgetBytes = 0
        c.destinations = [.rtmp(url: "rtmp://127.0.0.1:1/live", streamKey: "k1"),
                          .whip(url: "http://127.0.0.1:1/whip", token: ""),
                          .srt(url: "srt://127.0.0.1:1?latency=400", streamKey: ""),
                          .rtmp(url: "rtmp://127.0.0.1:2/live", streamKey: "k2"),
                          .whip(url: "http://127.0.0.1:2/whip", token: ""),
                          .file(path: "/nonexistent/r.mp4"),
                          .custom(BufferedSink())]
        let p = try PipelineAssembler.assemble(c, stats: BroadcastStats())
        var lines: [String: Int] = [:]
        for line in p.plan.lines { lines[line.key] = line.bytes }
        #expect(lines["rtmp_readers"] == 2 * RTMPChunkReader.plannedBytes)
        let whip = 2 * WHIPPublisher.bufferBytes + WHIPPublisher.libraryBytes
        #expect(lines["whip_buffers"] == whip)
        let srt = SRTBuffers(latencyMs: 400, maxBitrateKbps: Self.video.maxBitrateKbps).plannedBytes
        #expect(lines["srt_buffers"] == srt)
        let mp4 = MP4FileSink.plannedBytes(video: Self.video, audio: c.audio)
        #expect(lines["mp4_fragment"] == mp4)
        #expect(lines["relay"] == 3 << 20)
        // Every line is counted once in the total, and the JSON carries the same lines.
        let sum = p.plan.lines.reduce(0) { $0 + $1.bytes }
        #expect(p.plan.totalBytes == sum)
        let keys = p.plan.lines.map(\.key)
        let merged = keys.filter { $0 == "rtmp_readers" || $0 == "whip_buffers" }
        #expect(merged.count == 2)
        for key in ["rtmp_readers", "whip_buffers", "srt_buffers", "mp4_fragment", "relay"] {
            #expect(p.plan.json.contains("{\"key\":\"\(key)\""), "\(key) missing from the JSON plan")
        }
        // A plan without those destinations has none of their lines.
        c.destinations = [.discard]
        let bare = try PipelineAssembler.assemble(c, stats: BroadcastStats())
        #expect(bare.plan.destinationLines.isEmpty)
    }
}
