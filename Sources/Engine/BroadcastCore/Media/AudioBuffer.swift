/// Sample encodings accepted on the audio lanes (always interleaved).
public enum SampleFormat: String, Sendable {
    case s16, f32

    public var bytesPerSample: Int { self == .s16 ? 2 : 4 }
}

/// A borrowed view of interleaved PCM audio.
///
/// Like `VideoFrame`, the memory only has to stay valid during `process(_:type:)`.
public struct AudioBuffer: @unchecked Sendable {
    public var format: SampleFormat
    /// 1 or 2.
    public var channels: Int
    /// 44100 or 48000.
    public var sampleRate: Int
    /// Frames (samples per channel) in `data`.
    public var frameCount: Int
    public var data: UnsafeRawBufferPointer
    /// Capture time of the first frame, in nanoseconds on the source clock.
    public var pts: Int64

    public init(format: SampleFormat, channels: Int, sampleRate: Int, frameCount: Int,
                data: UnsafeRawBufferPointer, pts: Int64) {
        self.format = format
        self.channels = channels
        self.sampleRate = sampleRate
        self.frameCount = frameCount
        self.data = data
        self.pts = pts
    }

    /// Largest buffer a lane accepts in one call, in frames (0.5 s at 44.1 kHz).
    public static let maxFrames = 22_050

    /// Returns why the buffer is unusable, or nil.
    public func validate() -> String? {
        guard channels == 1 || channels == 2 else { return "audio channels \(channels) not 1 or 2" }
        guard sampleRate == 44_100 || sampleRate == 48_000 else {
            return "audio sample rate \(sampleRate) not 44100 or 48000"
        }
        guard frameCount > 0, frameCount <= AudioBuffer.maxFrames else {
            return "audio buffer of \(frameCount) frames outside 1..\(AudioBuffer.maxFrames)"
        }
        let needed = frameCount * channels * format.bytesPerSample
        guard data.baseAddress != nil, data.count >= needed else {
            return "audio buffer holds \(data.count) bytes, \(needed) needed"
        }
        return nil
    }
}
