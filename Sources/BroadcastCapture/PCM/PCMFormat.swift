import BroadcastKit

/// Layout of raw interleaved PCM input, written "s16le:48000:2" or "f32le:44100:1".
public struct PCMFormat: Sendable, Equatable, CustomStringConvertible {
    public var sampleFormat: SampleFormat
    /// 44100 or 48000.
    public var sampleRate: Int
    /// 1 or 2.
    public var channels: Int

    public init(sampleFormat: SampleFormat, sampleRate: Int, channels: Int) {
        self.sampleFormat = sampleFormat
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// Parses "s16le:48000:2" (format:rate:channels); formats are s16le and f32le.
    public init(parsing text: String) throws(CaptureError) {
        func bad(_ why: String) -> CaptureError {
            CaptureError(.badInput, "pcm: bad format '\(PrintableBytes.escape(text.utf8, limit: 64))': \(why) "
                         + "(expected e.g. s16le:48000:2)")
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw bad("need format:rate:channels") }
        switch parts[0] {
        case "s16le": sampleFormat = .s16
        case "f32le": sampleFormat = .f32
        default: throw bad("sample format must be s16le or f32le")
        }
        guard let rate = Int(parts[1]), rate == 44_100 || rate == 48_000 else {
            throw bad("rate must be 44100 or 48000")
        }
        guard let ch = Int(parts[2]), ch == 1 || ch == 2 else { throw bad("channels must be 1 or 2") }
        sampleRate = rate
        channels = ch
    }

    /// Bytes per frame (one sample of every channel).
    public var bytesPerFrame: Int { sampleFormat.bytesPerSample * channels }

    public var description: String {
        "\(sampleFormat == .s16 ? "s16le" : "f32le"):\(sampleRate):\(channels)"
    }
}
