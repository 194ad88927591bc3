#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A live broadcast: the Linux analogue of a ReplayKit broadcast upload extension's sample handler.
///
/// ```swift
/// var config = BroadcastConfiguration.default
/// config.destinations = [.rtmp(url: "rtmp://127.0.0.1/live", streamKey: key)]
/// let session = BroadcastSession(configuration: config)
/// try session.start()
/// session.process(.video(frame), type: .video)        // from your capture thread
/// session.process(.audio(samples), type: .appAudio)   // from your audio thread
/// session.finish()
/// ```
///
/// `process` may be called from any thread, concurrently for different lanes. Each lane is a
/// serial executor of its own; a buffer is converted when it arrives and encoded on its lane,
/// and nothing keeps it after its encoded bytes are handed to the send queues.
public final class BroadcastSession: SampleBufferSink, @unchecked Sendable {
    public enum State: Int, Sendable { case idle, running, finishing, finished, failed }

    public let configuration: BroadcastConfiguration
    public let stats = BroadcastStats()
    /// Receives lifecycle events (started, destination failures, warnings). Called from session threads.
    public var onEvent: (@Sendable (BroadcastEvent) -> Void)?

    private let clock = StreamClock()
    private let stateValue = Atomic<Int>(State.idle.rawValue)
    private var videoEncoder: VideoEncoder?
    private var audioEncoder: AudioEncoder?
    private var videoLane: VideoLane?
    private var audioLanes: [AudioLane] = []
    private var mixer: AudioMixer?
    private var interleaver: Interleaver?
    private var destinations: [Destination] = []
    private var bitrate: BitrateController?
    private let housekeeping = WorkerThread(name: "bk-housekeep")
    private let housekeepingStop = Atomic<Bool>(false)
    private let failureValue = Mutex<BroadcastError?>(nil)
    private var reportedDestinationFailure: [Bool] = []
    public private(set) var memoryPlan: MemoryPlan?

    public init(configuration: BroadcastConfiguration) {
        self.configuration = configuration
    }

    public var state: State { State(rawValue: stateValue.load(ordering: .acquiring)) ?? .failed }

    /// Set when the primary destination failed while streaming (the CLI exits 4).
    public var failure: BroadcastError? { failureValue.withLock { $0 } }

    /// Opens the encoders and allocates every pool and queue, then returns the memory plan
    /// (measured where it can be). Connects nothing. `start()` calls it when needed.
    ///
    /// When the plan does not fit the budget and `allowPresetDowngrade` is set, the session walks
    /// `EncoderLadder.steps` (e.g. veryfast -> veryfast-lean -> veryfast-lean with 1 pending frame
    /// -> ultrafast with 1 pending frame) until one fits; `downgradeNote` and the plan's encoder line say what was chosen.
    @discardableResult
    public func prepare() throws(BroadcastError) -> MemoryPlan {
        if let plan = memoryPlan { return plan }
        guard state == .idle else { throw .configuration("session already started") }
        let cfg = configuration
        guard cfg.hasVideo || cfg.hasAudio else { throw .configuration("nothing to broadcast: video and audio are both off") }
        let baseline = ProcessMemory.residentBytes()

        if cfg.hasAudio {
            do {
                switch cfg.audio.codec {
                case .aac: audioEncoder = try AACEncoder(settings: cfg.audio)
                case .opus: audioEncoder = try OpusEncoder(settings: cfg.audio)
                }
            } catch { throw .configuration("audio encoder: \(error)") }
        }
        let audioEncoderBytes = max(0, ProcessMemory.residentBytes() - baseline)

        // Interleaver staging must hold the largest frame the VBV allows plus the wait window.
        let videoStaging = max(512 << 10, cfg.video.maxBitrateKbps * 1000 / 8 * 2)
        let interleaver = Interleaver(hasVideo: cfg.hasVideo, hasAudio: cfg.hasAudio, videoBytes: videoStaging,
                                      stats: stats) { [unowned self] tag in
            for d in self.destinations where d.acceptsTags { d.queue.push(tag) }
        }
        self.interleaver = interleaver

        if let aenc = audioEncoder {
            let codec = cfg.audio.codec
            let delay = Int64(aenc.delaySamples)
            let mixer = AudioMixer(frameSize: aenc.frameSize) { [unowned interleaver, unowned aenc] samples, position in
                // Decoders play each packet `delay` samples late (AAC priming), so stamp it earlier.
                // The first packets would land before zero: they are encoded (the encoder state
                // stays continuous) but not sent, rather than clamped onto one repeated timestamp.
                let shifted = position - delay
                let ms = shifted >= 0 ? shifted * 1000 / AudioClock.rate : -1
                _ = aenc.encode(samples, timestampMs: ms) { p in
                    guard p.timestampMs >= 0 else { return }
                    interleaver.submit(type: .audio, timestampMs: p.timestampMs, isKeyframe: false,
                                       bodySize: FLVTagBody.audioBodySize(codec: codec, payloadCount: p.data.count),
                                       nowNs: MediaTime.now()) { dst in
                        _ = FLVTagBody.writeAudioFrame(codec: codec, p.data, into: dst)
                    }
                }
            }
            mixer.flushPaddingFrames = delay
            self.mixer = mixer
            audioLanes = [AudioLane(source: 0, mixer: mixer, stats: stats), AudioLane(source: 1, mixer: mixer, stats: stats)]
            for lane in audioLanes { try lane.prepareResampler() }
        }

        // Destinations: RTMP first so it is the primary (its delivery is what "sent" reports).
        func isRTMP(_ d: DestinationSettings) -> Bool { if case .rtmp = d { return true } else { return false } }
        let ordered = cfg.destinations.filter(isRTMP) + cfg.destinations.filter { !isRTMP($0) }
        for (i, d) in ordered.enumerated() {
            let sink: TagSink
            switch d {
            case .rtmp(let url, let key):
                sink = RTMPPublisher(url: url, streamKey: key, connectTimeoutSeconds: cfg.connectTimeoutSeconds,
                                     caFile: cfg.tlsCAFile)
            case .file(let path):
                sink = FLVFileSink(path: path, hasAudio: cfg.hasAudio, hasVideo: cfg.hasVideo)
            case .discard:
                sink = DiscardSink()
            case .custom(let custom):
                sink = custom
            }
            destinations.append(Destination(sink: sink, policy: cfg.congestion, isPrimary: i == 0, stats: stats,
                                            reconnect: sink is RTMPPublisher ? cfg.reconnect : .never))
        }
        reportedDestinationFailure = Array(repeating: false, count: destinations.count)

        let audioBytes = (mixer?.reservedBytes ?? 0) + audioLanes.reduce(0) { $0 + $1.reservedBytes }
        let queueBytes = destinations.reduce(0) { $0 + $1.queue.reservedBytes }
        var atOpenBytes = 0
        func plan(_ v: VideoEncoderSettings?, atOpen: Int, pending: Int) -> MemoryPlan {
            var p = MemoryPlan(budgetBytes: cfg.memoryBudgetBytes, baselineBytes: baseline, videoEncoderBytes: atOpen,
                               audioEncoderBytes: audioEncoderBytes,
                               framePoolBytes: v.map { FramePool.byteCount(width: $0.width, height: $0.height,
                                                                             capacity: pending) } ?? 0,
                               audioBytes: audioBytes, stagingBytes: interleaver.reservedBytes, queueBytes: queueBytes,
                               encoderWorkingBytes: v.map(MemoryPlan.x264WorkingBytes) ?? 0)
            p.captureBytes = cfg.captureReserveBytes
            return p
        }

        var chosen = plan(nil, atOpen: 0, pending: cfg.maxPendingVideoFrames)
        var pending = cfg.maxPendingVideoFrames
        if cfg.hasVideo {
            // EncoderLadder orders the configurations by memory; x264 is reopened only when a
            // step's settings differ from the open one's.
            let steps = EncoderLadder.steps(requested: cfg.video, pendingFrames: pending,
                                            allowDowngrade: cfg.allowPresetDowngrade)
            var openFailure: BroadcastError?
            func tryStep(_ step: EncoderLadder.Step) -> Bool {
                if videoEncoder?.settings != step.settings {
                    videoEncoder = nil
                    let before = ProcessMemory.residentBytes()
                    do { videoEncoder = try X264Encoder(settings: step.settings) } catch {
                        openFailure = .configuration("video encoder: \(error)")
                        return true   // stop the walk; thrown below
                    }
                    atOpenBytes = max(0, ProcessMemory.residentBytes() - before)
                }
                chosen = plan(step.settings, atOpen: atOpenBytes, pending: step.pendingFrames)
                chosen.encoderChoice = step.label
                pending = step.pendingFrames
                return chosen.fits
            }
            let index = EncoderLadder.choose(steps, fits: tryStep)
            // When nothing fits, the walk ended on the lightest step: its plan is reported and start() refuses.
            if let openFailure { throw openFailure }
            if let index, index > 0 {
                downgradeNote = "memory budget: x264 \(steps[index].label) instead of \(steps[0].label)"
                    + " (planned \(MemoryPlan.megabytes(chosen.totalBytes)) + \(MemoryPlan.megabytes(chosen.headroomBytes)) headroom"
                    + " of \(MemoryPlan.megabytes(cfg.memoryBudgetBytes)))"
            }
        }
        if let enc = videoEncoder {
            videoLane = VideoLane(encoder: enc, pendingFrames: pending, stats: stats) { [unowned interleaver] p, arrival in
                interleaver.submit(type: .video, timestampMs: p.timestampMs, isKeyframe: p.isKeyframe,
                                   bodySize: FLVTagBody.avcBodySize(payloadCount: p.data.count), nowNs: MediaTime.now(),
                                   captureNs: arrival) { dst in
                    _ = FLVTagBody.writeAVCFrame(p.data, compositionOffsetMs: p.compositionOffsetMs,
                                                 isKeyframe: p.isKeyframe, into: dst)
                }
            }
        }
        memoryPlan = chosen
        return chosen
    }

    /// Set by `prepare()` when the memory budget forced a lighter x264 preset.
    public private(set) var downgradeNote: String?

    /// The x264 settings in use (after any budget downgrade).
    public var effectiveVideoSettings: VideoEncoderSettings? { videoEncoder?.settings }

    /// Opens encoders, plans memory, connects every destination and starts the lanes.
    /// Throws `.configuration`/`.memoryBudget` (exit 2) or `.connect` (exit 3).
    public func start() throws(BroadcastError) {
        let cfg = configuration
        guard !cfg.destinations.isEmpty else { throw .configuration("no destination: give a stream URL/key or a record path") }
        let plan = try prepare()
        if cfg.memoryBudgetBytes > 0 && !plan.fits {
            throw .memoryBudget("memory plan exceeds the \(cfg.memoryBudgetBytes >> 20) MB budget:\n\(plan.description)")
        }
        let ordered = destinations

        for d in destinations {
            d.queue.onKeyframeNeeded = { [weak self] in self?.videoLane?.requestKeyframe() }
            d.onKeyframeNeeded = { [weak self] in self?.videoLane?.requestKeyframe() }
            d.onEvent = { [weak self] e in self?.onEvent?(e) }
            do {
                try d.open()
            } catch {
                for o in destinations where o.state == .live { o.finish(deadlineNs: MediaTime.now()) }
                throw .connect(error.description)
            }
            pushHeaders(into: d)
        }
        if let enc = videoEncoder, cfg.adaptiveBitrate, let primary = ordered.first, primary.sink is RTMPPublisher {
            bitrate = BitrateController(encoder: enc, queue: primary.queue, targetKbps: cfg.video.bitrateKbps,
                                        audioKbps: cfg.hasAudio ? cfg.audio.bitrateKbps : 0, stats: stats)
        }
        stats.update { $0.targetVideoKbps = cfg.video.bitrateKbps }

        videoLane?.start()
        for lane in audioLanes { lane.start() }
        stateValue.store(State.running.rawValue, ordering: .releasing)
        housekeeping.start { [self] in runHousekeeping() }
        onEvent?(.started(destinations.map { $0.sink.displayName }))
    }

    /// Sends onMetaData and the codec sequence headers, marked as headers (never dropped).
    private func pushHeaders(into d: Destination) {
        let cfg = configuration
        let meta = StreamMetadata(hasVideo: cfg.hasVideo, hasAudio: cfg.hasAudio, width: cfg.video.width,
                                  height: cfg.video.height, framerate: Double(cfg.video.fps),
                                  videoDataRateKbps: cfg.video.bitrateKbps, audioCodec: cfg.audio.codec,
                                  audioDataRateKbps: cfg.audio.bitrateKbps, audioSampleRate: cfg.audio.sampleRate,
                                  audioChannels: cfg.audio.channels, encoder: cfg.encoderName)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
        defer { scratch.deallocate() }
        if let n = meta.write(into: scratch) {
            d.pushHeader(FLVTag(type: .scriptData, timestampMs: 0, body: UnsafeRawBufferPointer(rebasing: scratch[0..<n]), isHeader: true))
        }
        if let enc = videoEncoder, let n = FLVTagBody.writeAVCSequenceHeader(configurationRecord: enc.decoderConfigurationRecord, into: scratch) {
            d.pushHeader(FLVTag(type: .video, timestampMs: 0, body: UnsafeRawBufferPointer(rebasing: scratch[0..<n]), isKeyframe: true, isHeader: true))
        }
        if let aenc = audioEncoder,
           let n = FLVTagBody.writeAudioSequenceHeader(codec: configuration.audio.codec, config: aenc.sequenceHeader, into: scratch) {
            d.pushHeader(FLVTag(type: .audio, timestampMs: 0, body: UnsafeRawBufferPointer(rebasing: scratch[0..<n]), isHeader: true))
        }
    }

    /// Hands one sample buffer to its lane. Never blocks on the network; returns at once with
    /// `.accepted` or a counted drop.
    @discardableResult
    public func process(_ buffer: SampleBuffer, type: SampleBufferType) -> ProcessResult {
        guard state == .running else { return .notRunning }
        switch (buffer, type) {
        case (.video(let frame), .video):
            guard let lane = videoLane else { return .dropped(.wrongLane) }
            return lane.process(frame) { clock.timelineMs($0) }
        case (.audio(let buf), .appAudio), (.audio(let buf), .micAudio):
            guard !audioLanes.isEmpty else { return .dropped(.wrongLane) }
            return audioLanes[type == .appAudio ? 0 : 1].process(buf) { clock.timelineNs($0) }
        default:
            stats.countDrop(.wrongLane)
            return .dropped(.wrongLane)
        }
    }

    private func runHousekeeping() {
        var nextSecond = MediaTime.now() + 1_000_000_000
        while !housekeepingStop.load(ordering: .acquiring) {
            var ts = timespec(tv_sec: 0, tv_nsec: 20_000_000)
            nanosleep(&ts, nil)
            let now = MediaTime.now()
            mixer?.poll(nowNs: now)
            interleaver?.poll(nowNs: now)
            checkDestinations()
            if now >= nextSecond {
                nextSecond += 1_000_000_000
                if let primary = destinations.first {
                    let bytes = primary.queue.queuedBytes, ms = primary.queue.queuedDurationMs
                    stats.update { $0.queueBytes = bytes; $0.queueMs = ms }
                }
                bitrate?.tick(nowNs: now)
            }
        }
    }

    private func checkDestinations() {
        for (i, d) in destinations.enumerated() where d.state == .failed && !reportedDestinationFailure[i] {
            reportedDestinationFailure[i] = true
            var message = d.error?.description ?? "destination failed"
            if !message.contains(d.sink.displayName) { message = "\(d.sink.displayName): \(message)" }
            if d.isPrimary {
                let err: BroadcastError
                switch d.error {
                case .publishRejected?, .tlsRejected?: err = .connect(message)
                default: err = .streaming(message)
                }
                failureValue.withLock { if $0 == nil { $0 = err } }
                onEvent?(.failed(message))
            } else {
                onEvent?(.warning("\(message); streaming continues without it"))
            }
        }
    }

    /// Stops accepting buffers, encodes what is pending, flushes the encoders, sends what is
    /// queued (up to `timeoutNs`), and closes every destination (RTMP: FCUnpublish + deleteStream).
    public func finish(timeoutNs: Int64 = 1_500_000_000) {
        guard stateValue.compareExchange(expected: State.running.rawValue, desired: State.finishing.rawValue,
                                         ordering: .acquiringAndReleasing).exchanged else { return }
        let deadline = MediaTime.now() + timeoutNs
        for lane in audioLanes { lane.finish() }
        mixer?.flush()
        videoLane?.finish()
        interleaver?.drain(nowNs: MediaTime.now())
        housekeepingStop.store(true, ordering: .releasing)
        housekeeping.join()
        for d in destinations { d.finish(deadlineNs: deadline) }
        checkDestinations()
        stateValue.store(State.finished.rawValue, ordering: .releasing)
        stats.update { $0.queueBytes = 0; $0.queueMs = 0 }
        onEvent?(.finished)
    }

    /// "connecting", "live", "reconnecting", "failed" or "finished": the primary destination's state.
    public var statusText: String {
        switch state {
        case .idle: return "connecting"
        case .finishing, .finished: return "finished"
        case .failed: return "failed"
        case .running:
            switch destinations.first?.state {
            case .reconnecting: return "reconnecting"
            case .failed: return "failed"
            default: return "live"
            }
        }
    }

    /// Capture-to-socket latency of video frames on the primary destination (p50, p99 in ms).
    public var videoLatencyMs: (p50: Double, p99: Double)? {
        guard let h = destinations.first?.latency, let p50 = h.percentileMs(0.5), let p99 = h.percentileMs(0.99) else { return nil }
        return (p50, p99)
    }

    /// Destinations' display names (secrets redacted).
    public var destinationNames: [String] { destinations.map { $0.sink.displayName } }
}
