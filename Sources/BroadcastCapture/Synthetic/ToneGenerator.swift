#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// One synthetic audio device: a continuous sine, optionally replaced by a 1 kHz beep at
/// every whole second of capture time, with a sample clock that may run fast or slow.
///
/// Owned by exactly one lane thread; fills one preallocated buffer per call.
final class ToneGenerator {
    let format: SampleFormat
    let channels: Int
    let sampleRate: Int
    let framesPerBuffer: Int
    private let toneHz: Int
    private let toneAmplitude: Double
    private let beeps: Bool
    /// Capture time of sample 0 relative to t0 (the mic delay), in ns.
    private let startOffset: Int64
    /// Samples per second of CLOCK_MONOTONIC time: rate * (1 + skew ppm / 1e6).
    private let effectiveRate: Double

    static let beepHz = 1000
    static let beepAmplitude = 0.8
    static let beepSeconds = 0.05

    private let beepLength: Int64
    private var beepSecond: Int64 = 1
    private var beepOnset: Int64

    private let buffer: UnsafeMutableRawBufferPointer

    init(format: SampleFormat, channels: Int, sampleRate: Int, framesPerBuffer: Int,
         toneHz: Int, amplitude: Double, beeps: Bool, startOffset: Int64, skewPPM: Double) {
        self.format = format
        self.channels = channels
        self.sampleRate = sampleRate
        self.framesPerBuffer = framesPerBuffer
        self.toneHz = toneHz
        toneAmplitude = amplitude
        self.beeps = beeps
        self.startOffset = startOffset
        effectiveRate = Double(sampleRate) * (1 + skewPPM / 1_000_000)
        beepLength = Int64((Double(sampleRate) * ToneGenerator.beepSeconds).rounded())
        buffer = .allocate(byteCount: framesPerBuffer * channels * format.bytesPerSample, alignment: 16)
        beepOnset = 0
        beepOnset = beeps ? onsetSample(second: 1) : .max
    }

    deinit { buffer.deallocate() }

    /// Capture time of sample `index`, relative to t0, in ns: where the skewed device clock
    /// puts it on CLOCK_MONOTONIC.
    @inline(__always)
    func captureOffset(ofSample index: Int64) -> Int64 {
        startOffset + Int64((Double(index) * 1e9 / effectiveRate).rounded())
    }

    /// The sample whose capture time is nearest to t0 + `second` s: the beep onset.
    func onsetSample(second: Int64) -> Int64 {
        Int64((Double(second * 1_000_000_000 - startOffset) * effectiveRate / 1e9).rounded())
    }

    /// Fills the buffer with samples [first, first + framesPerBuffer) and returns it.
    func fill(from first: Int64) -> UnsafeRawBufferPointer {
        let rate = Int64(sampleRate)
        let twoPi = 2 * Double.pi
        for frame in 0..<framesPerBuffer {
            let index = first + Int64(frame)
            while beeps && index >= beepOnset + beepLength {
                beepSecond += 1
                beepOnset = onsetSample(second: beepSecond)
            }
            let value: Double
            if index >= beepOnset {
                let t = Double(index - beepOnset) / Double(sampleRate)
                value = ToneGenerator.beepAmplitude * sin(twoPi * Double(ToneGenerator.beepHz) * t)
            } else {
                // Phase from (index mod rate): exact, since the tone is a whole number of Hz.
                let phase = Double(Int64(toneHz) * (index % rate)) / Double(rate)
                value = toneAmplitude * sin(twoPi * phase)
            }
            let base = frame * channels
            for channel in 0..<channels {
                if format == .f32 {
                    buffer.storeBytes(of: Float(value), toByteOffset: (base + channel) * 4, as: Float.self)
                } else {
                    buffer.storeBytes(of: Int16(value * 32767), toByteOffset: (base + channel) * 2, as: Int16.self)
                }
            }
        }
        return UnsafeRawBufferPointer(buffer)
    }
}
