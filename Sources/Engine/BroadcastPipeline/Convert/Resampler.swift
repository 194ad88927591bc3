import CSoxrShim
import BroadcastCore

/// Converts 44.1 kHz interleaved stereo Float32 to 48 kHz with libsoxr (a real band-limited
/// resampler, not linear interpolation). Output storage is preallocated for the largest buffer.
///
/// libsoxr is not linked: `CSoxrShim` loads it when soxr's state is created, and that happens on
/// the first `process` call (an audio lane's first 44.1 kHz buffer, on the lane's thread), not
/// here. A session whose audio is all 48 kHz therefore never maps libsoxr nor the OpenMP runtime
/// (libgomp) it pulls in. That first call is the one allocation this type makes after init
/// (dlopen once per process, soxr's filter state once per resampler); `reservedBytes` counts it
/// in the memory plan, and every later call allocates nothing.
package final class Resampler: @unchecked Sendable {
    let inputRate: Int
    let outputRate: Int
    /// soxr's state; nil until the first `process` (or for good after `failure`).
    private var soxr: OpaquePointer?
    /// Why soxr could not be set up (library missing); `process` then returns nil.
    private(set) var failure: String?
    private let out: UnsafeMutablePointer<Float>
    let maxOutputFrames: Int

    /// What one lane's resampler may hold once active, for the memory plan: its output storage and
    /// soxr's medium-quality 44.1 -> 48 kHz state (the 353 KB reserved before the load was lazy),
    /// plus half of what loading libsoxr + libgomp costs once per process (each of the two audio
    /// lanes reserves half). Measured on the release build, 720p Y4M + 44.1 kHz PCM on one lane
    /// against the same run at 48 kHz: VmHWM +1.07 to +1.32 MB, of which RssFile +0.72 MB.
    package static let reservedBytes = AudioBuffer.maxFrames * 2 * 4 * 2 + 512 << 10

    init(inputRate: Int, outputRate: Int = 48_000, maxInputFrames: Int = AudioBuffer.maxFrames) throws(BroadcastError) {
        guard inputRate > 0, outputRate > 0 else {
            throw BroadcastError.configuration("resampler \(inputRate)->\(outputRate) Hz could not be created")
        }
        self.inputRate = inputRate
        self.outputRate = outputRate
        maxOutputFrames = maxInputFrames * outputRate / inputRate + 256
        out = .allocate(capacity: maxOutputFrames * 2)
    }

    deinit {
        if let soxr { bk_soxr_delete(soxr) }
        out.deallocate()
    }

    /// True once soxr is loaded and its state created (after the first successful `process`).
    var isActive: Bool { soxr != nil }

    /// Output samples the resampler currently holds back (its group delay), at the output rate.
    var delayFrames: Double { soxr.map { bk_soxr_delay($0) } ?? 0 }

    /// Resamples `frames` stereo frames; the result is valid until the next call. nil when libsoxr
    /// cannot be loaded or soxr refuses the rates (`failure` says why; not retried).
    func process(_ input: UnsafePointer<Float>, frames: Int) -> UnsafeBufferPointer<Float>? {
        guard let s = soxr ?? activate() else { return nil }
        var idone = 0, odone = 0
        _ = bk_soxr_process(s, input, frames, &idone, out, maxOutputFrames, &odone)
        return UnsafeBufferPointer(start: out, count: odone * 2)
    }

    /// Loads libsoxr (once per process) and creates soxr's state; nil after a failure.
    private func activate() -> OpaquePointer? {
        if failure != nil { return nil }
        var message = [CChar](repeating: 0, count: 320)
        // Medium quality: 20-bit, low latency; far above what AAC/Opus keep.
        if let s = bk_soxr_create(Double(inputRate), Double(outputRate), 2, &message, message.count) {
            soxr = s
            return s
        }
        let text = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let reason = "resampler \(inputRate)->\(outputRate) Hz: \(text)"
        failure = reason
        // Once per resampler: its 44.1 kHz buffers are dropped (counted as malformed) from now on.
        Log.line("broadcast: \(reason); \(inputRate) Hz audio is dropped")
        return nil
    }
}
