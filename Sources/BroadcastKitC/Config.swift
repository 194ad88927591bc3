#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit
import CBroadcastKitABI

/// A destination as the C side configured it. The stream key stays in C memory we own, so it can
/// be wiped: it becomes a Swift String only when a session is built from the config.
enum CDestination {
    /// rtmp(s)://, srt:// or a WHIP http(s):// endpoint (`DestinationSettings.network`).
    case network(url: String, key: UnsafeMutablePointer<CChar>)
    case file(String)
}

/// Behind `bk_config *`.
final class ConfigBox {
    var configuration = BroadcastConfiguration.default
    var destinations: [CDestination] = []
    /// nil: the fixed default; -1: resolve like the CLI (cgroup aware); else explicit bytes.
    var memoryBudget: Int64?
    var lastError: UnsafeMutablePointer<CChar>?

    init() {
        configuration.encoderName = "BroadcastKit C ABI \(BuildVersion.number)"
        configuration.memoryBudgetSource = "default"
        // An embedder's host holds what it holds; the session budgets what it adds.
        configuration.memoryBudgetScope = .session
        configuration.memoryBudgetScopeSource = "the C ABI's default for embedders"
    }

    deinit {
        clearDestinations()
        free(lastError)
    }

    func clearDestinations() {
        for d in destinations {
            if case .network(_, let key) = d { wipeAndFree(key) }
        }
        destinations.removeAll()
    }

    func fail(_ status: bk_status, _ message: String) -> bk_status {
        free(lastError)
        lastError = strdup(message)
        return status
    }

    /// Applies `change` when the result passes `BroadcastConfiguration.validate()` (the library's
    /// rules, `BroadcastLimits`); else keeps the configuration and fails with the library's message.
    func apply(_ change: (inout BroadcastConfiguration) -> Void) -> bk_status {
        var candidate = configuration
        change(&candidate)
        do {
            try candidate.validate()
        } catch {
            return fail(BK_ERR_INVALID_ARGUMENT, error.description)
        }
        configuration = candidate
        return BK_OK
    }

    /// The Swift configuration a session runs with (the key is copied into a String here).
    func build() -> BroadcastConfiguration {
        var c = configuration
        c.destinations = destinations.map {
            switch $0 {
            case .network(let url, let key): return .network(url: url, streamKey: String(cString: key))
            case .file(let path): return .file(path: path)
            }
        }
        switch memoryBudget {
        case nil:
            break
        case .some(let b) where b == Int64(BK_MEMORY_BUDGET_AUTO):
            let r = MemoryBudget.resolve(explicit: nil)
            c.memoryBudgetBytes = r.bytes
            c.memoryBudgetSource = r.source
        case .some(let b):
            c.memoryBudgetBytes = Int(b)
            c.memoryBudgetSource = "bk_config_set_memory_budget"
        }
        return c
    }
}

/// Zeroes a C string in a way the optimiser keeps, then frees it.
func wipeAndFree(_ p: UnsafeMutablePointer<CChar>) {
    explicit_bzero(p, strlen(p))
    free(p)
}

@inline(__always)
func configBox(_ p: OpaquePointer?) -> ConfigBox? {
    guard let p else { return nil }
    return Unmanaged<ConfigBox>.fromOpaque(UnsafeRawPointer(p)).takeUnretainedValue()
}

private let emptyCString: StaticString = ""

func staticCString(_ s: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
}

@_cdecl("bk_config_new")
public func _bkConfigNew() -> OpaquePointer? {
    OpaquePointer(Unmanaged.passRetained(ConfigBox()).toOpaque())
}

@_cdecl("bk_config_free")
public func _bkConfigFree(_ p: OpaquePointer?) {
    guard let p else { return }
    Unmanaged<ConfigBox>.fromOpaque(UnsafeRawPointer(p)).release()
}

@_cdecl("bk_config_last_error")
public func _bkConfigLastError(_ p: OpaquePointer?) -> UnsafePointer<CChar> {
    guard let c = configBox(p), let e = c.lastError else { return staticCString(emptyCString) }
    return UnsafePointer(e)
}

@_cdecl("bk_config_set_video")
public func _bkConfigSetVideo(_ p: OpaquePointer?, _ width: Int32, _ height: Int32, _ fps: Int32,
                              _ kbps: Int32) -> bk_status {
    guard let c = configBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    // 0: the library's default for this size and rate.
    let bitrate = kbps == 0 ? BroadcastLimits.defaultVideoBitrateKbps(width: Int(width), height: Int(height), fps: Int(fps))
                            : Int(kbps)
    return c.apply {
        $0.video = VideoEncoderSettings(width: Int(width), height: Int(height), fps: Int(fps), bitrateKbps: bitrate,
                                        keyframeIntervalSeconds: $0.video.keyframeIntervalSeconds, preset: $0.video.preset)
    }
}

@_cdecl("bk_config_set_preset")
public func _bkConfigSetPreset(_ p: OpaquePointer?, _ preset: UnsafePointer<CChar>?) -> bk_status {
    guard let c = configBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    guard let preset else { return c.fail(BK_ERR_INVALID_ARGUMENT, "preset is NULL") }
    return c.apply { $0.video.preset = String(cString: preset) }
}

@_cdecl("bk_config_set_keyframe_interval")
public func _bkConfigSetKeyframeInterval(_ p: OpaquePointer?, _ seconds: Int32) -> bk_status {
    guard let c = configBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    return c.apply { $0.video.keyframeIntervalSeconds = Int(seconds) }
}

@_cdecl("bk_config_set_audio")
public func _bkConfigSetAudio(_ p: OpaquePointer?, _ codec: bk_audio_codec, _ kbps: Int32) -> bk_status {
    guard let c = configBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    let mapped: AudioCodec
    switch codec {
    case BK_AUDIO_NONE: return c.apply { $0.hasAudio = false }
    case BK_AUDIO_AAC: mapped = .aac
    case BK_AUDIO_OPUS: mapped = .opus
    default: return c.fail(BK_ERR_INVALID_ARGUMENT, "unknown audio codec \(codec.rawValue)")
    }
    return c.apply {
        $0.audio = AudioEncoderSettings(codec: mapped, bitrateKbps: Int(kbps))
        $0.hasAudio = true
    }
}

@_cdecl("bk_config_add_destination")
public func _bkConfigAddDestination(_ p: OpaquePointer?, _ url: UnsafePointer<CChar>?,
                                    _ key: UnsafePointer<CChar>?) -> bk_status {
    guard let c = configBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    guard let url, let key else { return c.fail(BK_ERR_INVALID_ARGUMENT, "destination URL or stream key is NULL") }
    let u = String(cString: url)
    // The library's check (`DestinationValidator`: the CLI's words), on the key where it lies, so
    // the key never becomes a Swift String before a session is built. The scheme picks the
    // transport: rtmp(s):// RTMP, srt:// MPEG-TS over SRT (the key fills the stream id when the
    // URL has none), http(s):// a WHIP endpoint (the key its bearer token; Opus audio needed).
    do {
        try DestinationValidator.check(url: u, keyUTF8: UnsafeRawBufferPointer(start: key, count: strlen(key)))
    } catch {
        return c.fail(BK_ERR_CONFIGURATION, error.description)
    }
    guard let copy = strdup(key) else { return c.fail(BK_ERR_CONFIGURATION, "out of memory") }
    c.destinations.append(.network(url: u, key: copy))
    return BK_OK
}

/// The name this call had when RTMP was the only network destination; kept for existing callers.
@_cdecl("bk_config_add_rtmp")
public func _bkConfigAddRTMP(_ p: OpaquePointer?, _ url: UnsafePointer<CChar>?, _ key: UnsafePointer<CChar>?) -> bk_status {
    _bkConfigAddDestination(p, url, key)
}

@_cdecl("bk_config_add_file")
public func _bkConfigAddFile(_ p: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> bk_status {
    guard let c = configBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    guard let path, path.pointee != 0 else { return c.fail(BK_ERR_INVALID_ARGUMENT, "file path is NULL or empty") }
    c.destinations.append(.file(String(cString: path)))
    return BK_OK
}

@_cdecl("bk_config_clear_destinations")
public func _bkConfigClearDestinations(_ p: OpaquePointer?) {
    configBox(p)?.clearDestinations()
}

@_cdecl("bk_config_set_memory_budget")
public func _bkConfigSetMemoryBudget(_ p: OpaquePointer?, _ bytes: Int64) -> bk_status {
    guard let c = configBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    guard bytes >= 0 || bytes == Int64(BK_MEMORY_BUDGET_AUTO) else {
        return c.fail(BK_ERR_INVALID_ARGUMENT, "memory budget \(bytes) is negative (0 disables, -1 is automatic)")
    }
    c.memoryBudget = bytes
    return BK_OK
}

@_cdecl("bk_config_set_memory_budget_scope")
public func _bkConfigSetMemoryBudgetScope(_ p: OpaquePointer?, _ scope: Int32) -> bk_status {
    guard let c = configBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    guard let s = MemoryBudgetScope(rawValue: Int(scope)) else {
        return c.fail(BK_ERR_INVALID_ARGUMENT, "memory budget scope \(scope): expected BK_BUDGET_SESSION (0) or BK_BUDGET_PROCESS (1)")
    }
    c.configuration.memoryBudgetScope = s
    c.configuration.memoryBudgetScopeSource = "bk_config_set_memory_budget_scope"
    return BK_OK
}

@_cdecl("bk_config_set_reconnect")
public func _bkConfigSetReconnect(_ p: OpaquePointer?, _ attempts: Int32, _ delay: Double) -> bk_status {
    guard let c = configBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    // The library's ranges and words (BroadcastLimits.reconnect*, ReconnectPolicy.refusal).
    return c.apply { $0.reconnect = ReconnectPolicy(maxAttempts: Int(attempts), initialDelaySeconds: delay) }
}

@_cdecl("bk_config_set_replay")
public func _bkConfigSetReplay(_ p: OpaquePointer?, _ seconds: Int32, _ directory: UnsafePointer<CChar>?) -> bk_status {
    guard let c = configBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    return c.apply { $0.replay = ReplaySettings(seconds: Int(seconds), directory: directory.map { String(cString: $0) } ?? ".") }
}

@_cdecl("bk_config_set_adaptive_bitrate")
public func _bkConfigSetAdaptiveBitrate(_ p: OpaquePointer?, _ enabled: Int32) -> bk_status {
    guard let c = configBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    c.configuration.adaptiveBitrate = enabled != 0
    return BK_OK
}

@_cdecl("bk_config_set_backpressure")
public func _bkConfigSetBackpressure(_ p: OpaquePointer?, _ mode: bk_backpressure) -> bk_status {
    guard let c = configBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    switch mode {
    case BK_BACKPRESSURE_DROP: c.configuration.backpressure = .drop
    case BK_BACKPRESSURE_BLOCK: c.configuration.backpressure = .block
    default: return c.fail(BK_ERR_INVALID_ARGUMENT, "backpressure \(mode.rawValue): expected BK_BACKPRESSURE_DROP or BK_BACKPRESSURE_BLOCK")
    }
    return BK_OK
}

@_cdecl("bk_config_set_capture_reserve")
public func _bkConfigSetCaptureReserve(_ p: OpaquePointer?, _ bytes: Int64) -> bk_status {
    guard let c = configBox(p) else { return BK_ERR_INVALID_ARGUMENT }
    guard bytes >= 0 else { return c.fail(BK_ERR_INVALID_ARGUMENT, "capture reserve \(bytes) is negative") }
    c.configuration.captureReserveBytes = Int(bytes)
    return BK_OK
}
