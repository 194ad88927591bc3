import BroadcastKit

/// What the synthetic `TestSource` produces, and which impairments it simulates.
public struct TestSourceSettings: Sendable, Equatable {
    // MARK: Video
    /// Emit the video lane.
    public var video: Bool = true
    /// Even, 64...8192.
    public var width: Int = 1280
    /// Even, 64...8192.
    public var height: Int = 720
    /// Whole frames per second, 1...240.
    public var fps: Int = 30
    /// `.i420` (cheap) or `.bgrx` (exercises the session's colour conversion).
    public var pixelFormat: PixelFormat = .i420
    /// `.moving` (default: a noise band that makes the encoder spend its bitrate) or
    /// `.static` (the bars alone, almost free to encode).
    public var pattern: TestPatternKind = .moving
    /// Alternate the frame between WxH and HxW every this many seconds, like a phone being
    /// rotated (nil = never). Both orientations are allocated before the first frame.
    public var rotateEverySeconds: Double? = nil

    // MARK: App audio (440 Hz tone + 1 kHz beep each second, Float32 stereo)
    /// Emit the app-audio lane.
    public var appAudio: Bool = true
    /// 44100 or 48000.
    public var appSampleRate: Int = 48_000
    /// Frames per app-audio buffer, 1...AudioBuffer.maxFrames.
    public var appBufferFrames: Int = 1024

    // MARK: Mic audio (660 Hz tone, S16 mono)
    /// Emit the mic lane.
    public var micAudio: Bool = true
    /// 44100 or 48000.
    public var micSampleRate: Int = 48_000
    /// Frames per mic buffer, 1...AudioBuffer.maxFrames.
    public var micBufferFrames: Int = 480

    // MARK: Impairments
    /// Audio sample clocks run this many ppm fast relative to CLOCK_MONOTONIC (negative = slow).
    /// Buffer PTS are the real capture times, so sample count and PTS disagree by this much.
    public var audioSkewPPM: Double = 0
    /// Every buffer's PTS gets a uniform random offset in [-jitterMs, +jitterMs] ms.
    /// Delivery time is not jittered.
    public var jitterMs: Double = 0
    /// Seed of the jitter PRNG (each lane derives its own stream from it).
    public var seed: UInt64 = 0x5EED
    /// The mic lane starts this many ms after t0.
    public var micDelayMs: Int = 0
    /// Start of a capture gap, in seconds after t0 (nil = no gap).
    public var gapAtSeconds: Double? = nil
    /// Length of the gap in ms: no lane delivers a buffer whose capture span touches
    /// [gapAt, gapAt + gapMs).
    public var gapMs: Int = 0

    // MARK: Run
    /// Stop after this much capture time, in seconds (nil = run until stop()).
    public var durationSeconds: Double? = nil
    /// Pace to CLOCK_MONOTONIC (a live source). false = as fast as the sink takes buffers;
    /// PTS are the same either way.
    public var realtime: Bool = true

    public init() {}

    /// 1280x720 at 30 fps I420 with the moving pattern, no rotation, app 48 kHz stereo f32 in 1024-frame buffers,
    /// mic 48 kHz mono s16 in 480-frame buffers, no impairments, realtime.
    public static let `default` = TestSourceSettings()

    /// Returns why the settings are unusable, or nil.
    public func validate() -> CaptureError? {
        func bad(_ message: String) -> CaptureError { CaptureError(.badInput, "test source: \(message)") }
        if !video && !appAudio && !micAudio { return bad("all lanes are disabled") }
        if video {
            guard (64...8192).contains(width), (64...8192).contains(height), width % 2 == 0, height % 2 == 0 else {
                return bad("size \(width)x\(height) must be even and within 64..8192")
            }
            guard (1...240).contains(fps) else { return bad("fps \(fps) outside 1..240") }
            guard pixelFormat == .i420 || pixelFormat == .bgrx else {
                return bad("pixel format \(pixelFormat.rawValue) not i420 or bgrx")
            }
            if let rotateEverySeconds {
                guard rotateEverySeconds <= 1_000_000, rotateEverySeconds * Double(fps) >= 1 else {
                    return bad("rotation every \(rotateEverySeconds) s must be between one frame and 1000000 s")
                }
            }
        }
        for (name, rate, frames) in [("app", appSampleRate, appBufferFrames), ("mic", micSampleRate, micBufferFrames)] {
            guard rate == 44_100 || rate == 48_000 else { return bad("\(name) sample rate \(rate) not 44100 or 48000") }
            guard (1...AudioBuffer.maxFrames).contains(frames) else {
                return bad("\(name) buffer of \(frames) frames outside 1..\(AudioBuffer.maxFrames)")
            }
        }
        guard abs(audioSkewPPM) <= 100_000 else { return bad("audio skew \(audioSkewPPM) ppm beyond ±100000") }
        guard jitterMs >= 0, jitterMs <= 10_000 else { return bad("jitter \(jitterMs) ms outside 0..10000") }
        guard micDelayMs >= 0 else { return bad("mic delay \(micDelayMs) ms is negative") }
        if let gapAtSeconds {
            guard gapAtSeconds >= 0, gapMs > 0 else { return bad("gap needs a start >= 0 s and a length > 0 ms") }
        }
        if let durationSeconds, !(durationSeconds > 0) { return bad("duration \(durationSeconds) s must be > 0") }
        return nil
    }
}
