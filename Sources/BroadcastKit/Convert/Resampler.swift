import CSoxr

/// Converts 44.1 kHz interleaved stereo Float32 to 48 kHz with libsoxr (a real band-limited
/// resampler, not linear interpolation). Output storage is preallocated for the largest buffer.
package final class Resampler: @unchecked Sendable {
    package let inputRate: Int
    package let outputRate: Int
    private let soxr: soxr_t
    private let out: UnsafeMutablePointer<Float>
    package let maxOutputFrames: Int

    package init(inputRate: Int, outputRate: Int = 48_000, maxInputFrames: Int = AudioBuffer.maxFrames) throws(BroadcastError) {
        self.inputRate = inputRate
        self.outputRate = outputRate
        var err: soxr_error_t? = nil
        var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        // Medium quality: 20-bit, low latency; far above what AAC/Opus keep.
        var q = soxr_quality_spec(UInt(SOXR_MQ), 0)
        guard let s = soxr_create(Double(inputRate), Double(outputRate), 2, &err, &io, &q, nil), err == nil else {
            throw BroadcastError.configuration("resampler \(inputRate)->\(outputRate) Hz could not be created")
        }
        soxr = s
        maxOutputFrames = maxInputFrames * outputRate / inputRate + 256
        out = .allocate(capacity: maxOutputFrames * 2)
    }

    deinit {
        soxr_delete(soxr)
        out.deallocate()
    }

    /// Output samples the resampler currently holds back (its group delay), at the output rate.
    package var delayFrames: Double { soxr_delay(soxr) }

    /// Resamples `frames` stereo frames; the result is valid until the next call.
    package func process(_ input: UnsafePointer<Float>, frames: Int) -> UnsafeBufferPointer<Float> {
        var idone = 0, odone = 0
        soxr_process(soxr, input, frames, &idone, out, maxOutputFrames, &odone)
        return UnsafeBufferPointer(start: out, count: odone * 2)
    }
}
