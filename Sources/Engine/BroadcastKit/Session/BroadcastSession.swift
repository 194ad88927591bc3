import Synchronization
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastFLV
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording

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
    /// Set it before `start()`: the session's threads read it without a lock, so setting it once
    /// they run is a programmer error (a precondition failure), not a race.
    public var onEvent: (@Sendable (BroadcastEvent) -> Void)? {
        get { eventHandler }
        set {
            precondition(state == .idle, "BroadcastSession.onEvent can only be set before start()")
            eventHandler = newValue
        }
    }
    private var eventHandler: (@Sendable (BroadcastEvent) -> Void)?

    private let clock = StreamClock()
    private let stateValue = Atomic<Int>(State.idle.rawValue)
    private var pipeline: Pipeline?
    private var housekeeper: Housekeeper?
    private let failureValue = Locked<BroadcastError?>(nil)

    public init(configuration: BroadcastConfiguration) {
        self.configuration = configuration
    }

    public var state: State { State(rawValue: stateValue.load(ordering: .acquiring)) ?? .failed }

    /// Set when the run failed while streaming: every network destination lost (or any, with
    /// `requireAllDestinations`), or the primary when there is none (the CLI exits 4, or 3 for a refusal).
    public var failure: BroadcastError? { failureValue.withLock { $0 } }

    /// Opens the encoders and allocates every pool and queue, then returns the memory plan
    /// (measured where it can be). Connects nothing. `start()` calls it when needed.
    ///
    /// When the plan does not fit the budget and `allowPresetDowngrade` is set, x264 is reopened
    /// with lighter settings until it fits; `downgradeNote` says what was chosen.
    @discardableResult
    public func prepare() throws(BroadcastError) -> MemoryPlan {
        if let p = pipeline { return p.plan }
        guard state == .idle else { throw .configuration("session already started") }
        try configuration.validate()
        let p = try PipelineAssembler.assemble(configuration, stats: stats, clock: clock)
        pipeline = p
        return p.plan
    }

    /// The memory plan, once `prepare()` or `start()` built it.
    public var memoryPlan: MemoryPlan? { pipeline?.plan }

    /// Set by `prepare()` when the memory budget forced lighter x264 settings.
    public var downgradeNote: String? { pipeline?.downgradeNote }

    /// The x264 settings in use (after any budget downgrade).
    public var effectiveVideoSettings: VideoEncoderSettings? { pipeline?.videoEncoder?.settings }

    /// Opens encoders, plans memory, connects every destination and starts the lanes.
    /// Throws `.configuration`/`.memoryBudget` (exit 2) or `.connect` (exit 3).
    public func start() throws(BroadcastError) {
        let cfg = configuration
        guard !cfg.destinations.isEmpty else { throw .configuration("no destination: give a stream URL/key or a record path") }
        let plan = try prepare()
        guard let p = pipeline else { return }
        if plan.budgetBytes > 0 && !plan.fits {
            throw .memoryBudget("memory plan exceeds the \(plan.budgetBytes >> 20) MB budget:\n\(plan.description)")
        }
        let headers = StreamHeaders(video: cfg.video, audio: cfg.audio, encoderName: cfg.encoderName,
                                    videoEncoder: p.videoEncoder, audioEncoder: p.audioEncoder)
        for d in p.destinations.all {
            d.queue.onKeyframeNeeded = { [weak self] in self?.pipeline?.videoLane?.requestKeyframe() }
            d.onKeyframeNeeded = { [weak self] in self?.pipeline?.videoLane?.requestKeyframe() }
            d.onEvent = { [weak self] e in self?.onEvent?(e) }
            do {
                try d.open()
            } catch {
                for o in p.destinations.all where o.state == .live { o.finish(deadlineNs: MediaTime.now()) }
                throw .connect(error.description)
            }
            headers.forEach { d.pushHeader($0) }
        }
        var bitrate: BitrateController?
        if let enc = p.videoEncoder, cfg.adaptiveBitrate, let primary = p.destinations.primary,
           primary.capabilities.isNetworkPublisher {
            bitrate = BitrateController(encoder: enc, destinations: p.destinations.all, follows: cfg.bitrateFollows,
                                        targetKbps: cfg.video.bitrateKbps,
                                        audioKbps: cfg.hasAudio ? cfg.audio.bitrateKbps : 0, stats: stats)
        }
        stats.update { $0.targetVideoKbps = cfg.video.bitrateKbps }

        let keeper = Housekeeper(pipeline: p, stats: stats, bitrate: bitrate) { [unowned self] in reportFailures() }
        do {
            try p.startLanes()
            try keeper.start()
        } catch {
            // Out of threads: nothing may run half-started. Stop what did start, close every
            // destination, and fail the start (no session runs with a lane that never ran).
            p.drainLanes()
            for d in p.destinations.all { d.finish(deadlineNs: MediaTime.now()) }
            stateValue.store(State.failed.rawValue, ordering: .releasing)
            throw .streaming(error.description)
        }
        housekeeper = keeper
        stateValue.store(State.running.rawValue, ordering: .releasing)
        onEvent?(.started(p.destinations.names))
    }

    /// Hands one sample buffer to its lane. Never blocks on the network. With
    /// `configuration.backpressure == .drop` it returns at once with `.accepted` or a counted
    /// drop; with `.block` a full lane is waited for (up to the timeout, then the drop is counted).
    @discardableResult
    public func process(_ buffer: SampleBuffer, type: SampleBufferType) -> ProcessResult {
        guard state == .running, let p = pipeline else { return .notRunning }
        switch (buffer, type) {
        case (.video(let frame), .video):
            guard let lane = p.videoLane else { break }
            if let deadline = configuration.backpressure.deadlineNs { _ = lane.waitForFreeSlot(deadlineNs: deadline) }
            return lane.process(frame) { clock.timelineMs($0) }
        case (.audio(let buf), .appAudio), (.audio(let buf), .micAudio):
            guard let lane = p.audioLane(type) else { break }
            return lane.process(buf, waitUntilNs: configuration.backpressure.deadlineNs) { clock.timelineNs($0) }
        default:
            break
        }
        stats.countDrop(.wrongLane)
        return .dropped(.wrongLane)
    }

    /// The producer of `type` ended by itself: the video lane makes no more repeats of its last
    /// picture (the stream ends where its input ended). Buffers that still arrive are encoded.
    public func endOfInput(_ type: SampleBufferType) {
        if type == .video { pipeline?.videoLane?.endOfInput() }
    }

    private func reportFailures() {
        pipeline?.destinations.reportNewFailures(
            onEvent: { onEvent?($0) },
            onFailure: { err in failureValue.withLock { if $0 == nil { $0 = err } } })
    }

    /// Stops accepting buffers, encodes what is pending, flushes the encoders, sends what is
    /// queued (up to `timeoutNs`), and closes every destination (RTMP: FCUnpublish + deleteStream).
    public func finish(timeoutNs: Int64 = 1_500_000_000) {
        guard stateValue.compareExchange(expected: State.running.rawValue, desired: State.finishing.rawValue,
                                         ordering: .acquiringAndReleasing).exchanged else { return }
        let deadline = MediaTime.now() + timeoutNs
        pipeline?.drainLanes()
        housekeeper?.stop()
        for d in pipeline?.destinations.all ?? [] { d.finish(deadlineNs: deadline) }
        // A run that ended while its destinations were reconnecting (at the stop, or
        // because the link failed during the final drain) lost the stream from the
        // moment the link went down: when that is every network publisher (or any, with
        // requireAll) it is a failure (exit 4), never a clean stop; else a warning.
        if let lost = pipeline?.destinations.lostAtEnd(), !lost.lines.isEmpty {
            if lost.fatal {
                let message = lost.lines.joined(separator: "; ")
                failureValue.withLock { if $0 == nil { $0 = .streaming(message) } }
                onEvent?(.failed(message))
            } else {
                lost.lines.forEach { onEvent?(.warning($0)) }
            }
        }
        reportFailures()
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
            switch pipeline?.destinations.primary?.state {
            case .reconnecting: return "reconnecting"
            case .failed: return "failed"
            default: return "live"
            }
        }
    }

    /// Capture-to-socket latency of video frames on the primary destination (p50, p99 in ms).
    public var videoLatencyMs: (p50: Double, p99: Double)? {
        guard let h = pipeline?.destinations.primary?.latency, let p50 = h.percentileMs(0.5),
              let p99 = h.percentileMs(0.99) else { return nil }
        return (p50, p99)
    }

    /// Each destination's state, rate, queue, drops, reconnects and downtime, primary first.
    public var destinationStats: [DestinationStats] { pipeline?.destinations.stats ?? [] }

    /// Seconds the primary destination was not delivering (0 before start).
    public var downtimeSeconds: Double { pipeline?.destinations.primary?.downtimeSeconds ?? 0 }

    /// Destinations' display names (secrets redacted).
    public var destinationNames: [String] { pipeline?.destinations.names ?? [] }

    // MARK: - Control

    /// Blocks until the video lane can take a frame, or `timeoutNs` passes; true when it can.
    /// For feeders that may wait (benchmarks pushing frames as fast as the encoder goes): live
    /// sources never wait, they get `.dropped(.encoderBusy)` and move on.
    package func waitForVideoCapacity(timeoutNs: Int64) -> Bool {
        guard state == .running, let lane = pipeline?.videoLane else { return false }
        return lane.waitForFreeSlot(deadlineNs: MediaTime.now() + timeoutNs)
    }

    /// Asks the encoder for a keyframe on the next picture (the control socket's `keyframe`).
    /// Safe from any thread; does nothing before `start()` or without video.
    public func requestKeyframe() { pipeline?.videoLane?.requestKeyframe() }

    /// Sets the x264 target and VBV maximum to `kbps` (the control socket's `set-bitrate`);
    /// the bitrate controller may still lower it when the link backs up. Safe from any thread.
    /// False when not running, without video, or outside `BroadcastLimits.videoBitrateKbps`.
    @discardableResult
    public func setVideoBitrate(kbps: Int) -> Bool {
        guard BroadcastLimits.videoBitrateKbps.contains(kbps) else { return false }
        guard state == .running, let enc = pipeline?.videoEncoder else { return false }
        enc.requestBitrate(kbps: kbps)
        stats.update { $0.targetVideoKbps = kbps }
        return true
    }

    // MARK: - Replay

    /// Saves the last `seconds` (default: all the replay buffer keeps) as an MP4 clip at `path`
    /// (default: a timestamped name in `configuration.replay.directory`), on the session's
    /// replay thread while the stream goes on; `completion` runs there. A failed save is also a
    /// `.warning` event; it never stops the session.
    public func saveReplay(to path: String? = nil, seconds: Double? = nil,
                           completion: @escaping @Sendable (Result<ReplayClip, BroadcastError>) -> Void) {
        guard state == .running, let saver = pipeline?.replay else {
            completion(.failure(.configuration(pipeline?.replay == nil
                ? "replay: the replay buffer is off (set configuration.replay.seconds)" : "replay: the session is not running")))
            return
        }
        saver.request(path: path, seconds: seconds) { [weak self] result in
            if case .failure(let e) = result { self?.onEvent?(.warning(e.description)) }
            completion(result)
        }
    }

    /// Runs the replay save path once on nothing (see `ReplaySaver.rehearse`), for a process
    /// that has just dropped its start-up code pages; nothing when the replay buffer is off.
    package func rehearseReplaySave() {
        guard state == .running else { return }
        pipeline?.replay?.rehearse()
    }

    /// `saveReplay(to:seconds:completion:)`, waiting for the clip: the calling thread blocks,
    /// the stream does not.
    @discardableResult
    public func saveReplay(to path: String? = nil, seconds: Double? = nil) throws(BroadcastError) -> ReplayClip {
        let done = ConditionLock()
        let box = ResultBox()
        saveReplay(to: path, seconds: seconds) { result in
            done.withLock { box.result = result; done.broadcast() }
        }
        let result: Result<ReplayClip, BroadcastError> = done.withLock {
            while box.result == nil { done.wait() }
            return box.result!
        }
        return try result.get()
    }

    private final class ResultBox: @unchecked Sendable {
        var result: Result<ReplayClip, BroadcastError>?
    }

    /// Seconds the replay buffer holds now (0 when off).
    public var replayHeldSeconds: Double { pipeline?.replay?.ring.heldSeconds ?? 0 }
}
