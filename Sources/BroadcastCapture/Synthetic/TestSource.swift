import BroadcastKit
import Synchronization

/// A synthetic live source with known ground truth, for tests, demos and benchmarks.
///
/// - Video: a scrolling pattern (by default with a band of per-frame noise that makes the
///   encoder work, `TestPatternKind`) with a burned-in frame counter (`CounterStrip` + digits);
///   frame n has PTS t0 + n / fps; frames n = k * fps (k >= 1) are solid white flashes.
///   With `rotateEverySeconds` the frame alternates between WxH and HxW, like a rotated phone.
/// - App audio: 440 Hz sine (0.25), Float32 stereo, with a 50 ms 1 kHz beep (0.8) whose
///   onset sample has capture time exactly t0 + k s, i.e. the flash frame's PTS.
/// - Mic audio: 660 Hz sine (0.25), S16 mono, no beep.
/// - Impairments (`TestSourceSettings`): audio clock skew, PTS jitter, late mic start, a gap.
///
/// Each lane runs on its own pthread and paces itself to CLOCK_MONOTONIC (unless
/// `realtime` is false). t0 is CLOCK_MONOTONIC when `start(into:)` is called.
public final class TestSource: CaptureSource {
    public let settings: TestSourceSettings
    private let group = LaneGroup()
    private let t0 = Atomic<Int64>(0)

    /// Throws `.badInput` when `settings.validate()` fails.
    public init(settings: TestSourceSettings = .default) throws(CaptureError) {
        if let problem = settings.validate() { throw problem }
        self.settings = settings
    }

    public var description: String {
        var parts: [String] = []
        if settings.video {
            var video = "video \(settings.width)x\(settings.height)@\(settings.fps) \(settings.pixelFormat.rawValue)"
            video += " \(settings.pattern.rawValue)"
            if let every = settings.rotateEverySeconds { video += ", rotating every \(every) s" }
            parts.append(video)
        }
        if settings.appAudio { parts.append("app \(settings.appSampleRate) Hz f32 stereo") }
        if settings.micAudio { parts.append("mic \(settings.micSampleRate) Hz s16 mono") }
        return "test source (" + parts.joined(separator: ", ") + ")"
    }

    /// CLOCK_MONOTONIC time of frame 0 / sample 0, in ns; nil before start.
    public var startTime: Int64? {
        let value = t0.load(ordering: .acquiring)
        return value == 0 ? nil : value
    }

    public var error: CaptureError? { group.error }

    /// The video lane's frame canvas: 4 bytes a pixel for packed formats, 1.5 for I420/NV12.
    public var plannedResidentBytes: Int {
        guard settings.video else { return 0 }
        let pixels = settings.width * settings.height
        switch settings.pixelFormat {
        case .i420, .nv12: return pixels * 3 / 2
        default: return pixels * 4
        }
    }

    public func start(into sink: SampleBufferSink) throws(CaptureError) {
        guard !group.hasLaunched else { throw CaptureError(.io, "test source: already started") }
        let s = settings
        let start = MediaTime.now()
        t0.store(start, ordering: .releasing)
        let timeline = TestTimeline(settings: s, t0: start)
        let pacer = Pacer(realtime: s.realtime)
        do {
            if s.video {
                // Both orientations paint into one buffer, allocated here, before the first frame.
                let storage = FrameStorage(byteCount: TestPattern.frameBytes(width: s.width, height: s.height,
                                                                             format: s.pixelFormat))
                let upright = TestPattern(width: s.width, height: s.height, format: s.pixelFormat,
                                          kind: s.pattern, storage: storage)
                let rotated = s.rotateEverySeconds == nil ? nil
                    : TestPattern(width: s.height, height: s.width, format: s.pixelFormat,
                                  kind: s.pattern, storage: storage)
                let lane = VideoLane(upright: upright, rotated: rotated,
                                     schedule: RotationSchedule(everySeconds: s.rotateEverySeconds, fps: s.fps),
                                     fps: s.fps, timeline: timeline, pacer: pacer, rng: SplitMixRandom(seed: s.seed))
                try group.spawn(name: "test-video") { [group] in lane.run(sink: sink, group: group) }
            }
            if s.appAudio {
                let tone = ToneGenerator(format: .f32, channels: 2, sampleRate: s.appSampleRate,
                                         framesPerBuffer: s.appBufferFrames, toneHz: 440, amplitude: 0.25,
                                         beeps: true, startOffset: 0, skewPPM: s.audioSkewPPM)
                let lane = AudioLane(tone: tone, type: .appAudio, timeline: timeline, pacer: pacer,
                                     rng: SplitMixRandom(seed: s.seed &+ 0x9E37_79B9_7F4A_7C15))
                try group.spawn(name: "test-app") { [group] in lane.run(sink: sink, group: group) }
            }
            if s.micAudio {
                let tone = ToneGenerator(format: .s16, channels: 1, sampleRate: s.micSampleRate,
                                         framesPerBuffer: s.micBufferFrames, toneHz: 660, amplitude: 0.25,
                                         beeps: false, startOffset: Int64(s.micDelayMs) * 1_000_000,
                                         skewPPM: s.audioSkewPPM)
                let lane = AudioLane(tone: tone, type: .micAudio, timeline: timeline, pacer: pacer,
                                     rng: SplitMixRandom(seed: s.seed &+ 0x3C6E_F372_FE94_F82B))
                try group.spawn(name: "test-mic") { [group] in lane.run(sink: sink, group: group) }
            }
        } catch {
            group.stop()
            throw error
        }
    }

    public func stop() { group.stop() }

    public func waitUntilFinished(timeoutNanoseconds: Int64) -> Bool {
        group.waitUntilFinished(timeoutNanoseconds: timeoutNanoseconds)
    }
}

/// The capture-time rules every test lane shares: end of run, the gap window, jitter.
struct TestTimeline: Sendable {
    let t0: Int64
    /// Absolute end of capture (exclusive), or Int64.max.
    let end: Int64
    let gapStart: Int64
    let gapEnd: Int64
    let jitterNs: Double

    init(settings: TestSourceSettings, t0: Int64) {
        self.t0 = t0
        end = settings.durationSeconds.map { t0 + Int64(($0 * 1e9).rounded()) } ?? .max
        if let at = settings.gapAtSeconds {
            gapStart = t0 + Int64((at * 1e9).rounded())
            gapEnd = gapStart + Int64(settings.gapMs) * 1_000_000
        } else {
            gapStart = .max
            gapEnd = .max
        }
        jitterNs = settings.jitterMs * 1_000_000
    }

    /// True when a buffer spanning [start, end) touches the gap (an instant when start == end).
    @inline(__always)
    func inGap(_ start: Int64, _ end: Int64) -> Bool {
        start == end ? (start >= gapStart && start < gapEnd) : (start < gapEnd && end > gapStart)
    }

    @inline(__always)
    func jitter(_ rng: inout SplitMixRandom) -> Int64 {
        jitterNs == 0 ? 0 : Int64((rng.nextSigned() * jitterNs).rounded())
    }
}

/// The video lane: render, wait for the frame's capture time, deliver.
private final class VideoLane: @unchecked Sendable {
    // Touched only by the lane's own thread once started.
    private let upright: TestPattern
    private let rotated: TestPattern?
    private let schedule: RotationSchedule
    private let fps: Int
    private let timeline: TestTimeline
    private let pacer: Pacer
    private var rng: SplitMixRandom

    init(upright: TestPattern, rotated: TestPattern?, schedule: RotationSchedule, fps: Int,
         timeline: TestTimeline, pacer: Pacer, rng: SplitMixRandom) {
        self.upright = upright
        self.rotated = rotated
        self.schedule = schedule
        self.fps = fps
        self.timeline = timeline
        self.pacer = pacer
        self.rng = rng
    }

    func run(sink: SampleBufferSink, group: LaneGroup) {
        var index: Int64 = 0
        while true {
            let capture = timeline.t0 + MediaTime.nanoseconds(ticks: index, num: Int64(fps), den: 1)
            if capture >= timeline.end { sink.endOfInput(.video); return }
            let deliver = !timeline.inGap(capture, capture)
            let pattern = schedule.isRotated(frame: index) ? rotated ?? upright : upright
            if deliver { pattern.render(frame: index, flash: TestPattern.isFlash(frame: index, fps: fps)) }
            guard pacer.wait(until: capture, group: group) else { return }
            if deliver {
                let pts = capture + timeline.jitter(&rng)
                sink.process(.video(pattern.videoFrame(pts: pts)), type: .video)
            }
            index += 1
        }
    }
}

/// An audio lane: fill a buffer, wait until its last sample has been "captured", deliver.
private final class AudioLane: @unchecked Sendable {
    // Touched only by the lane's own thread once started.
    private let tone: ToneGenerator
    private let type: SampleBufferType
    private let timeline: TestTimeline
    private let pacer: Pacer
    private var rng: SplitMixRandom

    init(tone: ToneGenerator, type: SampleBufferType, timeline: TestTimeline, pacer: Pacer, rng: SplitMixRandom) {
        self.tone = tone
        self.type = type
        self.timeline = timeline
        self.pacer = pacer
        self.rng = rng
    }

    func run(sink: SampleBufferSink, group: LaneGroup) {
        let frames = Int64(tone.framesPerBuffer)
        let bytesPerFrame = tone.channels * tone.format.bytesPerSample
        var first: Int64 = 0
        while true {
            let start = timeline.t0 + tone.captureOffset(ofSample: first)
            if start >= timeline.end { return }
            let end = timeline.t0 + tone.captureOffset(ofSample: first + frames)
            // Like a real device around a pause: the samples captured before the gap and those
            // after it are delivered (a buffer straddling an edge is cut there); none inside it.
            // Two sample ranges of this buffer, [0, headEnd) and [tailStart, frames): the whole
            // buffer outside a gap; the parts before and after it across an edge.
            var headEnd = frames, tailStart = frames
            if timeline.inGap(start, end) {
                headEnd = start < timeline.gapStart ? firstSample(atOrAfter: timeline.gapStart, from: first, frames) : 0
                tailStart = end > timeline.gapEnd ? firstSample(atOrAfter: timeline.gapEnd, from: first, frames) : frames
            }
            let any = headEnd > 0 || tailStart < frames
            let data = any ? UnsafeRawBufferPointer(tone.fill(from: first)) : UnsafeRawBufferPointer(start: nil, count: 0)
            guard pacer.wait(until: end, group: group) else { return }
            deliver(data, from: 0, to: headEnd, first: first, bytesPerFrame: bytesPerFrame, sink: sink)
            deliver(data, from: tailStart, to: frames, first: first, bytesPerFrame: bytesPerFrame, sink: sink)
            first += frames
        }
    }

    /// Delivers samples [from, to) of the buffer that starts at sample `first`, stamped with the
    /// capture time of its own first sample.
    private func deliver(_ data: UnsafeRawBufferPointer, from: Int64, to: Int64, first: Int64, bytesPerFrame: Int,
                         sink: SampleBufferSink) {
        guard to > from else { return }
        let slice = UnsafeRawBufferPointer(rebasing: data[Int(from) * bytesPerFrame..<Int(to) * bytesPerFrame])
        let buffer = AudioBuffer(format: tone.format, channels: tone.channels, sampleRate: tone.sampleRate,
                                 frameCount: Int(to - from), data: slice,
                                 pts: timeline.t0 + tone.captureOffset(ofSample: first + from) + timeline.jitter(&rng))
        sink.process(.audio(buffer), type: type)
    }

    /// The index within the buffer starting at sample `first` of its first sample captured at or
    /// after `instant` (`frames` when none is).
    private func firstSample(atOrAfter instant: Int64, from first: Int64, _ frames: Int64) -> Int64 {
        var k: Int64 = 0
        while k < frames && timeline.t0 + tone.captureOffset(ofSample: first + k) < instant { k += 1 }
        return k
    }
}
