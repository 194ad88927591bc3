#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit
import CBroadcastKitABI

/// The C event callback and its user pointer, handed to session threads.
struct EventTarget: @unchecked Sendable {
    let callback: bk_event_callback
    let userData: UnsafeMutableRawPointer?

    func deliver(_ event: BroadcastEvent) {
        var type = BK_EVENT_WARNING
        var message = ""
        var e = bk_event()
        switch event {
        case .started(let names): type = BK_EVENT_STARTED; message = names.joined(separator: ", ")
        case .warning(let m): type = BK_EVENT_WARNING; message = m
        case .reconnecting(let attempt, let delay):
            type = BK_EVENT_RECONNECTING; e.attempt = Int32(clamping: attempt); e.delay_seconds = delay
            message = "reconnecting (attempt \(attempt), in \(delay) s)"
        case .reconnected(let count): type = BK_EVENT_RECONNECTED; e.reconnects = Int32(clamping: count); message = "reconnected"
        case .failed(let m): type = BK_EVENT_FAILED; message = m
        case .finished: type = BK_EVENT_FINISHED
        }
        deliver(type, message, &e)
    }

    /// A `stop` request on the control socket: the embedder decides what stopping means.
    func deliverStopRequested() {
        var e = bk_event()
        deliver(BK_EVENT_STOP_REQUESTED, "stop requested on the control socket", &e)
    }

    private func deliver(_ type: bk_event_type, _ message: String, _ e: inout bk_event) {
        e.type = type
        message.withCString { m in
            e.message = m
            callback(&e, userData)
        }
    }
}

/// Behind `bk_session *`.
final class SessionBox: @unchecked Sendable {
    let session: BroadcastSession
    /// The strdup'ed message of the last failure, as an address (0: none).
    private let errorText = Locked<Int>(0)
    /// What `finish` returned, so a second call answers the same.
    var finishStatus: bk_status?
    /// When the box was made, and the snapshot of the last stats JSON: its rates start there.
    let createdNs = MediaTime.now()
    let previousStats = Locked<StatsSnapshot?>(nil)
    /// Set before start (bk_session_set_event_callback, bk_session_open_control); read by session threads.
    var eventTarget: EventTarget?
    var control: ControlServer?

    init(configuration: BroadcastConfiguration) {
        session = BroadcastSession(configuration: configuration)
    }

    deinit {
        errorText.withLock { free(UnsafeMutableRawPointer(bitPattern: $0)); $0 = 0 }
    }

    func fail(_ status: bk_status, _ message: String) -> bk_status {
        let copy = Int(bitPattern: strdup(message))
        errorText.withLock { free(UnsafeMutableRawPointer(bitPattern: $0)); $0 = copy }
        return status
    }

    func fail(_ error: BroadcastError) -> bk_status {
        switch error {
        case .configuration: return fail(BK_ERR_CONFIGURATION, error.description)
        case .memoryBudget: return fail(BK_ERR_MEMORY_BUDGET, error.description)
        case .connect: return fail(BK_ERR_CONNECT, error.description)
        case .streaming: return fail(BK_ERR_STREAMING, error.description)
        }
    }

    var lastError: UnsafePointer<CChar>? { UnsafePointer(bitPattern: errorText.withLock { $0 }) }
}

@inline(__always)
func sessionBox(_ p: OpaquePointer?) -> SessionBox? {
    guard let p else { return nil }
    return Unmanaged<SessionBox>.fromOpaque(UnsafeRawPointer(p)).takeUnretainedValue()
}

@_cdecl("bk_session_new")
public func _bkSessionNew(_ cfg: OpaquePointer?) -> OpaquePointer? {
    guard let c = configBox(cfg) else { return nil }
    return OpaquePointer(Unmanaged.passRetained(SessionBox(configuration: c.build())).toOpaque())
}

@_cdecl("bk_session_free")
public func _bkSessionFree(_ p: OpaquePointer?) {
    guard let p else { return }
    release(p)
    // The session's pools and encoders went back to malloc, which keeps freed pages resident: a
    // host that opens and closes sessions would see its RSS climb by each one's peak (a Python host:
    // 45 -> 63 MB over six sessions; with the trim 45 -> 52 MB after the first, then flat).
    bk_abi_trim_heap()
}

/// Finishes and releases the session. A function of its own, so every reference it takes ends
/// with it: the session is deallocated when this returns, before the trim.
@inline(never)
private func release(_ p: OpaquePointer) {
    let box = Unmanaged<SessionBox>.fromOpaque(UnsafeRawPointer(p))
    let b = box.takeUnretainedValue()
    let s = b.session
    if s.state == .running { _ = _bkSessionFinish(p) }
    b.control?.close()
    b.control = nil
    // onEvent may only change before start (BroadcastSession's precondition); a finished session
    // sends nothing more, and releasing the box releases the callback with it.
    if s.state == .idle { s.onEvent = nil }
    box.release()
}

@_cdecl("bk_session_last_error")
public func _bkSessionLastError(_ p: OpaquePointer?) -> UnsafePointer<CChar> {
    sessionBox(p)?.lastError ?? staticCString("")
}

@_cdecl("bk_session_set_event_callback")
public func _bkSessionSetEventCallback(_ p: OpaquePointer?, _ cb: bk_event_callback?,
                                       _ user: UnsafeMutableRawPointer?) -> bk_status {
    guard let box = sessionBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    guard box.session.state == .idle else { return box.fail(BK_ERR_STATE, "the event callback can only be set before start") }
    box.eventTarget = cb.map { EventTarget(callback: $0, userData: user) }
    box.routeEvents()
    return BK_OK
}

extension SessionBox {
    /// The session's events go to the C callback and to the control socket's subscribers.
    func routeEvents() {
        let target = eventTarget, control = control
        if target == nil && control == nil {
            session.onEvent = nil
            return
        }
        session.onEvent = { (e: BroadcastEvent) in
            target?.deliver(e)
            if let json = ControlServer.eventJSON(e) { control?.publish(json) }
        }
    }

    /// After finish: subscribers get `stopped`, then the socket is closed and removed.
    func closeControl(status: bk_status) {
        guard let c = control else { return }
        c.publishStopped(exitCode: status == BK_OK ? 0 : 4, reason: session.failure?.description ?? "finished")
        c.close()
        control = nil
    }
}

@_cdecl("bk_session_open_control")
public func _bkSessionOpenControl(_ p: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> bk_status {
    guard let box = sessionBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    guard let path, path.pointee != 0 else { return box.fail(BK_ERR_INVALID_ARGUMENT, "control socket path is NULL or empty") }
    guard box.session.state == .idle, box.control == nil else {
        return box.fail(BK_ERR_STATE, "the control socket can only be opened once, before start")
    }
    do {
        let server = try ControlServer(path: String(cString: path))
        box.control = server
        box.routeEvents()
        let session = box.session
        do {
            try server.start(session: session, version: BuildVersion.description + " (libbroadcastkit)") { [weak box] in
                box?.eventTarget?.deliverStopRequested()
            }
        } catch {
            server.close()
            box.control = nil
            return box.fail(BK_ERR_CONFIGURATION, "control socket: \(error)")
        }
        if let note = server.takeoverNote { session.onEvent?(.warning(note)) }
        return BK_OK
    } catch {
        return box.fail(BK_ERR_CONFIGURATION, "control socket " + error.description)
    }
}

@_cdecl("bk_session_prepare")
public func _bkSessionPrepare(_ p: OpaquePointer?) -> bk_status {
    guard let box = sessionBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    do {
        try box.session.prepare()
        return BK_OK
    } catch {
        return box.fail(error)
    }
}

@_cdecl("bk_session_memory_plan")
public func _bkSessionMemoryPlan(_ p: OpaquePointer?) -> UnsafeMutablePointer<CChar>? {
    guard let box = sessionBox(p) else { return nil }
    do {
        let plan = try box.session.prepare()
        var text = plan.description
        if let note = box.session.downgradeNote { text = note + "\n" + text }
        return strdup(text)
    } catch {
        _ = box.fail(error)
        return nil
    }
}

@_cdecl("bk_session_start")
public func _bkSessionStart(_ p: OpaquePointer?) -> bk_status {
    guard let box = sessionBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    guard box.session.state == .idle else { return box.fail(BK_ERR_STATE, "session already started") }
    do {
        try box.session.start()
        return BK_OK
    } catch {
        return box.fail(error)
    }
}

@inline(__always)
func cResult(_ r: ProcessResult) -> bk_process_result {
    switch r {
    case .accepted: return BK_ACCEPTED
    case .notRunning: return BK_NOT_RUNNING
    case .dropped(let reason):
        switch reason {
        case .encoderBusy: return BK_DROPPED_ENCODER_BUSY
        case .audioLaneFull: return BK_DROPPED_AUDIO_LANE_FULL
        case .malformed: return BK_DROPPED_MALFORMED
        case .backwardsTimestamp: return BK_DROPPED_BACKWARDS_TIMESTAMP
        case .wrongLane: return BK_DROPPED_WRONG_LANE
        case .congestionPFrame: return BK_DROPPED_CONGESTION_P_FRAME
        case .congestionUntilIDR: return BK_DROPPED_CONGESTION_UNTIL_IDR
        case .queueFull: return BK_DROPPED_QUEUE_FULL
        case .encoderError: return BK_DROPPED_ENCODER_ERROR
        }
    }
}

// The two process entry points wrap the caller's pointers in a VideoFrame/AudioBuffer (plain
// structs on the stack) and call the Swift API: no copy, no allocation.

@_cdecl("bk_session_process_video")
public func _bkSessionProcessVideo(_ p: OpaquePointer?, _ f: UnsafePointer<bk_video_frame>?) -> bk_process_result {
    guard let box = sessionBox(p), let f else { return BK_INVALID_BUFFER }
    let c = f.pointee
    let format: PixelFormat
    switch c.format {
    case BK_PIXEL_BGRA: format = .bgra
    case BK_PIXEL_BGRX: format = .bgrx
    case BK_PIXEL_RGBA: format = .rgba
    case BK_PIXEL_RGBX: format = .rgbx
    case BK_PIXEL_NV12: format = .nv12
    case BK_PIXEL_I420: format = .i420
    default: return BK_INVALID_BUFFER
    }
    let frame = VideoFrame(width: Int(c.width), height: Int(c.height), format: format,
                           planes: c.planes,
                           strides: (Int(c.strides.0), Int(c.strides.1), Int(c.strides.2)),
                           planeSizes: (Int(c.plane_sizes.0), Int(c.plane_sizes.1), Int(c.plane_sizes.2)),
                           pts: c.pts_ns)
    return cResult(box.session.process(.video(frame), type: .video))
}

@_cdecl("bk_session_process_audio")
public func _bkSessionProcessAudio(_ p: OpaquePointer?, _ lane: bk_audio_lane,
                                   _ a: UnsafePointer<bk_audio_buffer>?) -> bk_process_result {
    guard let box = sessionBox(p), let a else { return BK_INVALID_BUFFER }
    let type: SampleBufferType
    switch lane {
    case BK_LANE_APP_AUDIO: type = .appAudio
    case BK_LANE_MIC_AUDIO: type = .micAudio
    default: return BK_INVALID_BUFFER
    }
    let c = a.pointee
    let format: SampleFormat
    switch c.format {
    case BK_SAMPLE_S16: format = .s16
    case BK_SAMPLE_F32: format = .f32
    default: return BK_INVALID_BUFFER
    }
    let size = c.data == nil ? 0 : Int(max(0, c.data_size))
    let audio = AudioBuffer(format: format, channels: Int(c.channels), sampleRate: Int(c.sample_rate),
                            frameCount: Int(c.frame_count), data: UnsafeRawBufferPointer(start: c.data, count: size),
                            pts: c.pts_ns)
    return cResult(box.session.process(.audio(audio), type: type))
}

@_cdecl("bk_session_finish")
public func _bkSessionFinish(_ p: OpaquePointer?) -> bk_status {
    guard let box = sessionBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    if let done = box.finishStatus { return done }
    box.session.finish()
    var status = BK_OK
    if let failure = box.session.failure { status = box.fail(BK_ERR_STREAMING, failure.description) }
    if box.session.state == .finished {
        box.finishStatus = status
        box.closeControl(status: status)
    }
    return status
}

@_cdecl("bk_session_save_replay")
public func _bkSessionSaveReplay(_ p: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ seconds: Double,
                                 _ savedPath: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> bk_status {
    guard let box = sessionBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    savedPath?.pointee = nil
    do {
        let clip = try box.session.saveReplay(to: path.map { String(cString: $0) },
                                              seconds: seconds > 0 && seconds.isFinite ? seconds : nil)
        savedPath?.pointee = strdup(clip.path)
        return BK_OK
    } catch {
        return box.fail(error)
    }
}

@_cdecl("bk_session_set_video_bitrate")
public func _bkSessionSetVideoBitrate(_ p: OpaquePointer?, _ kbps: Int32) -> bk_status {
    guard let box = sessionBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    let range = BroadcastLimits.videoBitrateKbps
    guard range.contains(Int(kbps)) else {
        return box.fail(BK_ERR_INVALID_ARGUMENT, "video bitrate \(kbps) kbps outside \(range.lowerBound)..\(range.upperBound)")
    }
    guard box.session.setVideoBitrate(kbps: Int(kbps)) else {
        return box.fail(BK_ERR_STATE, "the session is not running or has no video")
    }
    return BK_OK
}

@_cdecl("bk_session_request_keyframe")
public func _bkSessionRequestKeyframe(_ p: OpaquePointer?) -> bk_status {
    guard let box = sessionBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    guard box.session.state == .running else { return box.fail(BK_ERR_STATE, "the session is not running") }
    box.session.requestKeyframe()
    return BK_OK
}

@_cdecl("bk_session_state")
public func _bkSessionState(_ p: OpaquePointer?) -> bk_state {
    guard let box = sessionBox(p) else { return BK_STATE_FAILED }
    switch box.session.state {
    case .idle: return BK_STATE_IDLE
    case .running: return BK_STATE_RUNNING
    case .finishing: return BK_STATE_FINISHING
    case .finished: return BK_STATE_FINISHED
    case .failed: return BK_STATE_FAILED
    }
}

@_cdecl("bk_session_status")
public func _bkSessionStatus(_ p: OpaquePointer?) -> UnsafePointer<CChar> {
    guard let box = sessionBox(p) else { return staticCString("failed") }
    switch box.session.statusText {
    case "connecting": return staticCString("connecting")
    case "live": return staticCString("live")
    case "reconnecting": return staticCString("reconnecting")
    case "finished": return staticCString("finished")
    default: return staticCString("failed")
    }
}
