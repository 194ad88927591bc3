import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastFLV
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording

/// Builds a session's `Pipeline` from its configuration: the one place the stages are created
/// and connected, and where the memory plan decides the encoder settings.
///
/// Order matters for the plan: the runtime baseline is measured first, then each encoder's
/// resident growth across its open; every pool and queue is allocated here, before the first
/// buffer, so the plan counts what the session will hold.
enum PipelineAssembler {
    static func assemble(_ configuration: BroadcastConfiguration, stats: BroadcastStats,
                                 clock: StreamClock = StreamClock()) throws(BroadcastError) -> Pipeline {
        try validateNetworkDestinations(configuration)
        var cfg = configuration
        // WebRTC receivers (browsers among them) decode constrained baseline; one encode serves every destination.
        if cfg.destinations.contains(where: { if case .whip = $0 { return true } else { return false } }) {
            cfg.video.profile = "baseline"
        }
        guard cfg.hasVideo || cfg.hasAudio else {
            throw .configuration("nothing to broadcast: video and audio are both off")
        }
        let baselineSample = ProcessMemory.sample()
        let baseline = baselineSample.residentBytes
        // A session-scoped budget charges growth from here, not what the host holds; each open's
        // growth is the largest seen in the process (`MeasuredOpenCost`), so sessions opened and
        // closed one after another plan alike.
        let sessionScope = cfg.memoryBudgetScope == .session
        let audioEncoder = cfg.hasAudio ? try makeAudioEncoder(cfg.audio) : nil
        let afterAudio = ProcessMemory.sample()
        var audioEncoderBytes = max(0, afterAudio.residentBytes - baseline)
        if sessionScope && cfg.hasAudio {
            audioEncoderBytes = MeasuredOpenCost.charge("audio encoder \(cfg.audio.codec)", measured: audioEncoderBytes)
        }

        let destinations = DestinationSet(makeDestinations(cfg, stats: stats, audioDelaySamples: audioEncoder?.delaySamples ?? 0),
                                          requireAll: cfg.requireAllDestinations)
        let replayRing = ReplayAssembly.makeRing(cfg)
        // Interleaver staging must hold the largest frame the VBV allows plus the wait window.
        let videoStaging = max(512 << 10, cfg.video.maxBitrateKbps * 1000 / 8 * 2)
        let interleaver = Interleaver(hasVideo: cfg.hasVideo, hasAudio: cfg.hasAudio, videoBytes: videoStaging,
                                      stagingWaitNs: cfg.backpressure.stageWaitNs, stats: stats,
                                      deliversEncoded: destinations.takesEncodedStage) { [unowned destinations] packet, stage in
            destinations.push(packet, at: stage)
            // A clip starts mid-stream and brings its own pre-roll (ReplaySaver).
            if stage == .interleaved && !packet.isPriming { replayRing?.append(packet) }
        }

        var mixer: AudioMixer?
        var audioLanes: [AudioLane] = []
        if let aenc = audioEncoder {
            let writer = AudioPacketWriter(encoder: aenc, interleaver: interleaver)
            let m = AudioMixer(frameSize: aenc.frameSize) { samples, position in writer.encode(samples, position: position) }
            m.flushPaddingFrames = writer.delaySamples
            m.silenceWithoutSource = cfg.backpressure.repeatsLastPicture
            m.producerIsClock = cfg.backpressure.producerIsClock
            if let wait = cfg.backpressure.stageWaitNs { m.blockWaitNs = wait }
            m.timeline = clock
            audioLanes = [AudioLane(lane: .appAudio, mixer: m, stats: stats), AudioLane(lane: .micAudio, mixer: m, stats: stats)]
            if cfg.audioMayNeedResampling { for lane in audioLanes { try lane.prepareResampler() } }
            mixer = m
        }

        let fixed = MemoryPlan(budgetBytes: cfg.memoryBudgetBytes, baselineBytes: sessionScope ? 0 : baseline, videoEncoderBytes: 0,
                               audioEncoderBytes: audioEncoderBytes, framePoolBytes: 0,
                               audioBytes: (mixer?.reservedBytes ?? 0) + audioLanes.reduce(0) { $0 + $1.reservedBytes },
                               stagingBytes: interleaver.reservedBytes,
                               queueBytes: destinations.all.reduce(0) { $0 + $1.queue.reservedBytes })
        var plan = fixed
        // The code the session's parts first ran while being built (after a start-up release it
        // was not resident at the baseline), measured: it stays resident for the whole run.
        plan.sessionCodeBytes = max(0, ProcessMemory.fileBytes() - afterAudio.fileBytes)
        if sessionScope { plan.sessionCodeBytes = MeasuredOpenCost.charge(sessionCodeKind(cfg), measured: plan.sessionCodeBytes) }
        plan.baselineFileBytes = baselineSample.fileBytes
        plan.captureBytes = cfg.captureReserveBytes
        // Each destination says what it holds beyond its queue, on its kind's own lines.
        plan.destinationLines = MemoryPlan.merged(destinations.all.flatMap { $0.sink.memoryPlanLines })
        plan.budgetSource = cfg.memoryBudgetSource
        plan.budgetScope = cfg.memoryBudgetScope
        plan.budgetScopeSource = cfg.memoryBudgetScopeSource
        plan.hostBytesAtPrepare = baseline
        if sessionScope {
            let recordings = cfg.destinations.filter { if case .file = $0 { return true } else { return false } }.count
            let budget = MemoryBudget.sessionScoped(MemoryBudget(bytes: cfg.memoryBudgetBytes, source: cfg.memoryBudgetSource),
                                                    hostBytes: baseline, recordings: recordings)
            plan.budgetBytes = budget.bytes
            plan.budgetSource = budget.source
        }
        ReplayAssembly.plan(&plan, ring: replayRing)
        var videoEncoder: VideoEncoder?
        var videoLane: VideoLane?
        var note: String?
        if cfg.hasVideo {
            let chosen = try chooseVideoEncoder(cfg, fixedPlan: plan)
            videoEncoder = chosen.encoder
            plan = chosen.plan
            note = chosen.note
            let writer = VideoPacketWriter(interleaver: interleaver)
            videoLane = VideoLane(encoder: chosen.encoder, pendingFrames: chosen.pendingFrames, stats: stats,
                                  clock: clock, repeatsLastPicture: cfg.backpressure.repeatsLastPicture) { p, arrival in
                writer.submit(p, captureNs: arrival)
            }
        }
        if let lane = videoLane {
            // A receiver's keyframe request (WHIP's PLI/FIR): the next frame is encoded as an IDR.
            for d in destinations.all { (d.endpoint as? KeyframeRequesting)?.keyframeRequester = { lane.requestKeyframe() } }
        }
        ReplayAssembly.noteLongestFit(&plan, cfg)
        plan.fileBytesAtPlan = ProcessMemory.fileBytes()
        let pipeline = Pipeline(videoEncoder: videoEncoder, audioEncoder: audioEncoder, videoLane: videoLane,
                                audioLanes: audioLanes, mixer: mixer, interleaver: interleaver, destinations: destinations,
                                plan: plan, downgradeNote: note)
        pipeline.replay = ReplayAssembly.makeSaver(replayRing, cfg, video: videoEncoder, audio: audioEncoder)
        return pipeline
    }

    /// A bad URL, key or SRT passphrase is a configuration error before anything opens:
    /// `DestinationValidator`, the check every front end shares (`validate()` ran it already;
    /// a caller of `assemble` alone gets it too).
    static func validateNetworkDestinations(_ cfg: BroadcastConfiguration) throws(BroadcastError) {
        try DestinationValidator.check(cfg)
    }

    /// The kind of the code a session's parts fault in while built (`MeasuredOpenCost`): which
    /// destinations, lanes and replay ring it has.
    static func sessionCodeKind(_ cfg: BroadcastConfiguration) -> String {
        let kinds = cfg.destinations.map { d -> String in
            switch d {
            case .rtmp: return "rtmp"
            case .srt: return "srt"
            case .whip: return "whip"
            case .file(let path): return MP4FileSink.isMP4(path) ? "mp4" : "flv"
            case .discard: return "discard"
            case .custom: return "custom"
            }
        }
        return "session code \(Set(kinds).sorted()) video \(cfg.hasVideo) audio \(cfg.hasAudio)"
            + " resampler \(cfg.audioMayNeedResampling) replay \(cfg.replay.seconds > 0)"
    }

    static func makeAudioEncoder(_ settings: AudioEncoderSettings) throws(BroadcastError) -> AudioEncoder {
        do {
            switch settings.codec {
            case .aac: return try AACEncoder(settings: settings)
            case .opus: return try OpusEncoder(settings: settings)
            }
        } catch { throw .configuration("audio encoder: \(error)") }
    }

    /// Network publishers first, so the primary (what "sent" reports) is the RTMP stream when there is one.
    /// `audioDelaySamples`: the audio encoder's delay, for an MP4 recording's edit list.
    static func makeDestinations(_ cfg: BroadcastConfiguration, stats: BroadcastStats, audioDelaySamples: Int) -> [Destination] {
        let sinks: [any PacketSink] = cfg.destinations.map { d in
            switch d {
            case .rtmp(let url, let key):
                let publisher = RTMPPublisher(url: url, streamKey: key, connectTimeoutSeconds: cfg.connectTimeoutSeconds,
                                              caFile: cfg.tlsCAFile)
                publisher.enhancedConnect = cfg.enhancedRTMPConnect
                return publisher
            case .srt(let url, let key, let passphrase):
                return SRTPublisher(url: url, streamKey: key, passphrase: passphrase, hasVideo: cfg.hasVideo,
                                    audio: cfg.hasAudio ? cfg.audio : nil, maxBitrateKbps: cfg.video.maxBitrateKbps,
                                    connectTimeoutSeconds: cfg.connectTimeoutSeconds,
                                    linkStallNs: cfg.backpressure.stageWaitNs == nil ? nil : SRTBuffers.blockModeStallNs)
            case .whip(let url, let token):
                return WHIPPublisher(url: url, token: token, hasVideo: cfg.hasVideo, hasAudio: cfg.hasAudio,
                                     connectTimeoutSeconds: cfg.connectTimeoutSeconds, caFile: cfg.tlsCAFile)
            case .file(let path) where MP4FileSink.isMP4(path):
                return MP4FileSink(path: path, video: cfg.hasVideo ? cfg.video : nil, audio: cfg.hasAudio ? cfg.audio : nil,
                                   audioDelaySamples: audioDelaySamples)
            case .file(let path): return FLVFileSink(path: path, hasAudio: cfg.hasAudio, hasVideo: cfg.hasVideo)
            case .discard: return DiscardSink()
            case .custom(let custom): return FLVTagSinkAdapter(custom)
            }
        }
        let ordered = sinks.filter { $0.capabilities.isNetworkPublisher } + sinks.filter { !$0.capabilities.isNetworkPublisher }
        var policy = cfg.congestion
        policy.maxBytes = cfg.sendQueueBytes
        return ordered.enumerated().map { i, sink in
            // Each destination gets its own queue and congestion state: a slow one drops in its own
            // queue and never holds the others back.
            // The media-time thresholds are a network link's (OBS's policy): a recording or a custom
            // sink drops only at the byte cap. A producer faster than real time sends media seconds
            // per wall second, and the recording of a non-live pipeline lost P-frames as "congestion".
            // In block mode every queue waits for its sink instead (`stageWaitNs`): a network link
            // that backs up slows the producer, so it has no media-time thresholds either.
            let block = cfg.backpressure.stageWaitNs
            let network = sink.capabilities.isNetworkPublisher
            return Destination(sink: sink, policy: network && block == nil ? policy : policy.byteCapOnly,
                               isPrimary: i == 0, stats: stats, reconnect: network ? cfg.reconnect : .never,
                               blockWaitNs: block)
        }
    }

    /// Walks `EncoderLadder`'s steps, heaviest first, until the plan fits (or the last step),
    /// opening x264 again only when a step's settings change.
    ///
    /// x264's cost at open is measured on the first open. A later open reuses pages the closed
    /// encoder left resident and would measure near zero, so the plan keeps the largest figure
    /// seen: the honest cost of opening an encoder of this size.
    static func chooseVideoEncoder(_ cfg: BroadcastConfiguration, fixedPlan: MemoryPlan)
        throws(BroadcastError) -> (encoder: VideoEncoder, plan: MemoryPlan, pendingFrames: Int, note: String?) {
        let steps = EncoderLadder.steps(requested: cfg.video, pendingFrames: cfg.maxPendingVideoFrames,
                                        allowDowngrade: cfg.allowPresetDowngrade)
        var encoder: X264Encoder?
        var atOpen = 0
        var plan = fixedPlan
        var openFailure: BroadcastError?
        func planFor(_ step: EncoderLadder.Step) -> Bool {
            if encoder?.settings != step.settings {
                encoder = nil
                let before = ProcessMemory.residentBytes()
                do { encoder = try X264Encoder(settings: step.settings) } catch {
                    openFailure = .configuration("video encoder: \(error)")
                    return true   // ends the walk; thrown below
                }
                let growth = ProcessMemory.residentBytes() - before
                atOpen = max(atOpen, cfg.memoryBudgetScope == .session
                    ? MeasuredOpenCost.charge(MeasuredOpenCost.x264Kind(step.settings), measured: growth) : growth)
            }
            plan = fixedPlan
            plan.videoEncoderBytes = atOpen
            plan.framePoolBytes = FramePool.byteCount(width: step.settings.width, height: step.settings.height,
                                                      capacity: step.pendingFrames)
            plan.encoderWorkingBytes = MemoryPlan.x264WorkingBytes(step.settings)
            plan.encoderChoice = step.label
            return plan.fits
        }
        let chosen = EncoderLadder.choose(steps, fits: planFor)
        if let openFailure { throw openFailure }
        guard let enc = encoder else { throw .configuration("video encoder: no configuration could be opened") }
        // When nothing fits, the walk ended on the lightest step: its plan is reported and start() refuses.
        let step = steps[chosen ?? steps.count - 1]
        var note: String?
        if let index = chosen, index > 0 {
            note = "memory budget: x264 \(step.label) instead of \(steps[0].label)"
                + " (planned \(MemoryPlan.megabytes(plan.totalBytes)) + \(MemoryPlan.megabytes(plan.headroomBytes)) headroom"
                + " of \(MemoryPlan.megabytes(plan.budgetBytes)))"
        }
        return (enc, plan, step.pendingFrames, note)
    }
}
