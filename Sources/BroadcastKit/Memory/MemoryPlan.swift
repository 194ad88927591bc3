/// The session's memory plan: what each part holds, measured or reserved, against the budget.
public struct MemoryPlan: Sendable, CustomStringConvertible {
    public var budgetBytes: Int
    /// RSS before any encoder opened: runtime, libraries, CLI.
    public var baselineBytes: Int
    /// RSS growth measured across x264_encoder_open.
    public var videoEncoderBytes: Int
    public var audioEncoderBytes: Int
    public var framePoolBytes: Int
    public var audioBytes: Int
    public var stagingBytes: Int
    public var queueBytes: Int
    /// x264 allocates its reference and lookahead frames on the first encodes, after open;
    /// this is the planned size of that working set.
    public var encoderWorkingBytes: Int

    public init(budgetBytes: Int, baselineBytes: Int, videoEncoderBytes: Int, audioEncoderBytes: Int,
                framePoolBytes: Int, audioBytes: Int, stagingBytes: Int, queueBytes: Int,
                encoderWorkingBytes: Int = 0) {
        self.budgetBytes = budgetBytes
        self.baselineBytes = baselineBytes
        self.videoEncoderBytes = videoEncoderBytes
        self.audioEncoderBytes = audioEncoderBytes
        self.framePoolBytes = framePoolBytes
        self.audioBytes = audioBytes
        self.stagingBytes = stagingBytes
        self.queueBytes = queueBytes
        self.encoderWorkingBytes = encoderWorkingBytes
    }

    /// Planned x264 working set: reference, current and recycled frames with x264's 32-pixel
    /// padding on every side, plus the half-resolution planes VBV rate control keeps per frame.
    public static func x264WorkingBytes(_ v: VideoEncoderSettings) -> Int {
        let padded = (v.width + 64) * (v.height + 64)
        let perFrame = padded * 3 / 2 + padded            // picture + lowres planes
        let frames = v.referenceFrames + 2 + (v.slicedThreads ? 0 : max(0, v.threads - 1))
        return frames * perFrame
    }

    public var totalBytes: Int {
        baselineBytes + videoEncoderBytes + audioEncoderBytes + framePoolBytes + audioBytes + stagingBytes
            + queueBytes + encoderWorkingBytes
    }

    public var fits: Bool { budgetBytes <= 0 || totalBytes <= budgetBytes }

    public var description: String {
        func mb(_ b: Int) -> String {
            let tenths = (b * 10 + (1 << 19)) >> 20
            return "\(tenths / 10).\(tenths % 10) MB"
        }
        var lines: [String] = []
        lines.append("  runtime baseline (measured)        \(mb(baselineBytes))")
        lines.append("  x264 at open (measured)            \(mb(videoEncoderBytes))")
        lines.append("  x264 working frames (planned)      \(mb(encoderWorkingBytes))")
        lines.append("  audio encoder at open (measured)   \(mb(audioEncoderBytes))")
        lines.append("  encoder input frame pool           \(mb(framePoolBytes))")
        lines.append("  audio lanes + mixer                \(mb(audioBytes))")
        lines.append("  interleaver staging                \(mb(stagingBytes))")
        lines.append("  send queues (byte caps)            \(mb(queueBytes))")
        lines.append("  total                              \(mb(totalBytes)) of \(budgetBytes > 0 ? mb(budgetBytes) : "unlimited") budget")
        return lines.joined(separator: "\n")
    }
}
