#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit
import CPipeWireShim
import Synchronization

/// One PipeWire capture stream on its own thread (a pw_thread_loop inside the C shim).
/// Shared by the screen and audio sources: it owns the C handle, forwards mapped buffers to the
/// sink without copying, and tracks the end/error state behind `waitUntilFinished`.
final class PipeWireStream: @unchecked Sendable {
    /// What one stream's PipeWire client adds to the process once it runs (its pw_context, thread
    /// loop and stack, the SPA plugins and the code they fault in), for the memory plan. The
    /// streams start after the plan, so no measured line sees them. Measured by `scripts/bench`'s
    /// memory matrix (`pipewire_client_per_stream_bytes`): the largest (VmHWM − plan) of a PipeWire
    /// row less that of the test-source row at the same output size and ring, over the row's three
    /// streams (screen, app audio, mic): 0.99 MiB before this line existed (720p, no ring: +1.49
    /// against −1.48 MiB), 1.16 MiB at 0b693ae (BENCHMARKS.md); the difference of two rows'
    /// residuals moves by about 0.2 MiB between runs, and with 1 MiB every PipeWire row's plan
    /// stays above its VmHWM.
    static let clientResidentBytes = 1 << 20
    enum Kind { case video, sinkMonitor, source }

    let kind: Kind
    let lane: SampleBufferType
    private let target: String?
    private let targetID: UInt32
    private let remoteFD: Int32
    private let streamName: String
    private let channels: Int32
    private let rate: Int32
    private let buffers: Int32
    private let videoWidth: Int32
    private let videoHeight: Int32
    private let durationNs: Int64?
    /// CLOCK_MONOTONIC time at which a `duration` run ends (0: no end); set in start().
    private let endAt = Atomic<Int64>(0)

    // Written once in start() before the C stream exists; read on the stream thread.
    private var sink: SampleBufferSink?
    private var handle: OpaquePointer?

    /// Guards `handle`, `started`, `finished` and `failure`; its condition wakes `waitUntilFinished`.
    private let cond = ConditionLock()
    private var finished = false
    private var failure: CaptureError?
    private var started = false

    /// Buffers handed to the sink so far (for tests and stats).
    let delivered = Atomic<Int>(0)
    /// The last negotiated format, e.g. "video BGRx 1280x720".
    let format = Locked<String>("")

    init(kind: Kind, target: String?, targetID: UInt32 = UInt32.max, remoteFD: Int32 = -1,
         streamName: String, channels: Int = 2, rate: Int = 48_000, buffers: Int = 2,
         videoSize: (width: Int, height: Int)? = nil, durationSeconds: Double? = nil) {
        self.kind = kind
        self.lane = kind == .video ? .video : (kind == .sinkMonitor ? .appAudio : .micAudio)
        self.target = target
        self.targetID = targetID
        self.remoteFD = remoteFD
        self.streamName = streamName
        self.channels = Int32(channels)
        self.rate = Int32(rate)
        self.buffers = Int32(buffers)
        videoWidth = Int32(videoSize?.width ?? 0)
        videoHeight = Int32(videoSize?.height ?? 0)
        self.durationNs = durationSeconds.map { Int64($0 * 1e9) }
    }

    deinit {
        if let handle { bk_pw_capture_close(handle) }
    }

    func start(into sink: SampleBufferSink) throws(CaptureError) {
        let again = cond.withLock {
            let was = started
            started = true
            return was
        }
        if again { throw CaptureError(.badInput, "PipeWire \(streamName): a source starts only once") }
        self.sink = sink
        if let durationNs { endAt.store(MediaTime.now() + durationNs, ordering: .relaxed) }
        var message = [CChar](repeating: 0, count: 512)
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        let opened: OpaquePointer? = streamName.withCString { name in
            withOptionalCString(target) { targetPtr in
                var config = bk_pw_capture_config()
                config.kind = kind == .video ? Int32(BK_PW_CAPTURE_VIDEO.rawValue)
                    : kind == .sinkMonitor ? Int32(BK_PW_CAPTURE_SINK_MONITOR.rawValue) : Int32(BK_PW_CAPTURE_SOURCE.rawValue)
                config.stream_name = name
                config.target = targetPtr
                config.target_id = targetID
                config.remote_fd = remoteFD
                config.channels = channels
                config.rate = rate
                config.buffers = buffers
                config.video_width = videoWidth
                config.video_height = videoHeight
                config.on_video = pipeWireVideoThunk
                config.on_audio = pipeWireAudioThunk
                config.on_event = pipeWireEventThunk
                config.ctx = ctx
                return bk_pw_capture_open(&config, &message, message.count)
            }
        }
        guard let opened else {
            let text = PipeWireNodes.cString(message)
            let error = CaptureError(text.hasPrefix("no PipeWire") ? .unavailable : .io, text)
            end(error)
            throw error
        }
        cond.withLock { handle = opened }
    }

    /// Disconnects and joins the stream thread; idempotent.
    func stop() {
        let h: OpaquePointer? = cond.withLock {
            let h = handle
            handle = nil
            return h
        }
        if let h { bk_pw_capture_close(h) }
        end(nil)
    }

    /// Holds the stream's thread for `milliseconds`, so its next callbacks run that late, as on a
    /// starved CPU (tests: the buffers that wait meanwhile must keep their capture times).
    func holdThread(milliseconds: Int) {
        // Not under `cond`: the stream thread takes it when it ends.
        if let h = cond.withLock({ handle }) { bk_pw_capture_hold_loop(h, Int32(milliseconds)) }
    }

    func waitUntilFinished(timeoutNanoseconds: Int64) -> Bool {
        let end = endAt.load(ordering: .relaxed)
        if end != 0 {
            let now = MediaTime.now()
            if now >= end { self.end(nil); return true }
            if timeoutNanoseconds < 0 || now + timeoutNanoseconds > end {
                // Wait only until the duration is over, then report the end.
                if waitUntilFinished(untilDeadline: end) { return true }
                self.end(nil)
                return true
            }
        }
        if timeoutNanoseconds < 0 {
            return cond.withLock {
                while !finished { cond.wait() }
                return true
            }
        }
        return waitUntilFinished(untilDeadline: MediaTime.now() + timeoutNanoseconds)
    }

    private func waitUntilFinished(untilDeadline deadline: Int64) -> Bool {
        cond.withLock {
            while !finished && MediaTime.now() < deadline { cond.wait(untilNs: deadline) }
            return finished
        }
    }

    /// True once a `duration` run is over: buffers after that are not delivered.
    @inline(__always) private func pastEnd() -> Bool {
        let end = endAt.load(ordering: .relaxed)
        return end != 0 && MediaTime.now() >= end
    }

    var error: CaptureError? { cond.withLock { failure } }

    private func end(_ error: CaptureError?) {
        cond.withLock {
            if failure == nil, let error { failure = error }
            finished = true
            cond.broadcast()
        }
    }

    // MARK: stream thread

    fileprivate func deliver(_ f: bk_pw_video_frame) {
        guard let sink, !pastEnd(), let format = PipeWireStream.pixelFormat(f.format) else { return }
        var frame = VideoFrame(
            width: Int(f.width), height: Int(f.height), format: format,
            planes: (f.planes.0, f.planes.1, f.planes.2),
            strides: (Int(f.strides.0), Int(f.strides.1), Int(f.strides.2)),
            planeSizes: (Int(f.plane_sizes.0), Int(f.plane_sizes.1), Int(f.plane_sizes.2)),
            pts: f.pts_ns)
        frame.sourcePagesReleasable = f.releasable != 0
        sink.process(.video(frame), type: .video)
        delivered.add(1, ordering: .relaxed)
    }

    fileprivate func deliver(_ a: bk_pw_audio_chunk) {
        guard let sink, !pastEnd(), let data = a.data else { return }
        let buffer = AudioBuffer(
            format: a.format == Int32(BK_PW_SAMPLE_F32.rawValue) ? .f32 : .s16,
            channels: Int(a.channels), sampleRate: Int(a.rate), frameCount: Int(a.frames),
            data: UnsafeRawBufferPointer(start: data, count: Int(a.bytes)), pts: a.pts_ns)
        sink.process(.audio(buffer), type: lane)
        delivered.add(1, ordering: .relaxed)
    }

    fileprivate func event(_ code: Int32, _ message: String) {
        if code == Int32(BK_PW_EVENT_ERROR.rawValue) {
            end(CaptureError(message.contains("went away") ? .unavailable : .io, message))
        } else if code == Int32(BK_PW_EVENT_FORMAT.rawValue) {
            format.withLock { $0 = message }
        } else if code == Int32(BK_PW_EVENT_NO_DEVICE.rawValue) {
            // The lane goes quiet and the session mixes silence in its place; say so once per loss.
            let laneName = lane == .appAudio ? "app audio" : "mic"
            Log.line("broadcast: \(laneName) is silence: \(message); capture follows the next default")
        }
    }

    static func pixelFormat(_ code: Int32) -> PixelFormat? {
        switch UInt32(code) {
        case BK_PW_PIXEL_BGRX.rawValue: return .bgrx
        case BK_PW_PIXEL_BGRA.rawValue: return .bgra
        case BK_PW_PIXEL_RGBX.rawValue: return .rgbx
        case BK_PW_PIXEL_RGBA.rawValue: return .rgba
        case BK_PW_PIXEL_NV12.rawValue: return .nv12
        case BK_PW_PIXEL_I420.rawValue: return .i420
        default: return nil
        }
    }
}

private func withOptionalCString<R>(_ s: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let s else { return body(nil) }
    return s.withCString { body($0) }
}

// C callbacks: the context is the unretained PipeWireStream, which outlives its C handle.
private let pipeWireVideoThunk: bk_pw_video_cb = { ctx, frame in
    guard let ctx, let frame else { return }
    Unmanaged<PipeWireStream>.fromOpaque(ctx).takeUnretainedValue().deliver(frame.pointee)
}

private let pipeWireAudioThunk: bk_pw_audio_cb = { ctx, chunk in
    guard let ctx, let chunk else { return }
    Unmanaged<PipeWireStream>.fromOpaque(ctx).takeUnretainedValue().deliver(chunk.pointee)
}

private let pipeWireEventThunk: bk_pw_event_cb = { ctx, code, message in
    guard let ctx else { return }
    let text = message.map { String(cString: $0) } ?? ""
    Unmanaged<PipeWireStream>.fromOpaque(ctx).takeUnretainedValue().event(code, text)
}
