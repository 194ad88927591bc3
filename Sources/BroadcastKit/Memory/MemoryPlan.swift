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
    /// Buffers the capture source holds (reported by the embedding tool or the CLI).
    public var captureBytes: Int = 0
    /// What the servers' bytes may make us hold: each RTMP publisher's chunk reader, bounded
    /// (`RTMPChunkReader.plannedBytes`), whatever a server sends.
    public var networkReaderBytes: Int = 0
    /// Where the budget came from ("default", "--memory-budget", "cgroup v2 limit ...").
    public var budgetSource: String = "configuration"
    /// The x264 configuration the plan is for, e.g. "veryfast" or
    /// "veryfast-lean (no sub-pel; cabac, deblock, 8x8dct, AQ kept)"; empty without video.
    public var encoderChoice: String = ""
    /// The replay ring and what saving a clip from it holds (0 without `--replay-seconds`).
    public var replayBytes: Int = 0
    /// Seconds the replay ring keeps.
    public var replaySeconds: Int = 0
    /// When the plan does not fit with the ring: the most seconds that would (0: none).
    public var replayLongestFit: Int?

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

    /// x264 presets from heaviest to lightest. (The budget downgrade walks `EncoderLadder`.)
    public static let presetsByWeight = ["medium", "fast", "faster", "veryfast", "superfast", "ultrafast"]

    /// Planned x264 memory beyond what it holds right after open: reference, current and
    /// lowres frames plus analysis buffers, allocated on the first encodes. Bytes per output
    /// pixel were calibrated on this build by `scripts/bench` (peak RSS minus the rest of the
    /// plan, 480p to 1080p, 1 reference frame, zerolatency): see BENCHMARKS.md.
    public static func x264WorkingBytes(_ v: VideoEncoderSettings) -> Int {
        let perPixel: Double
        switch v.preset {
        case _ where v.subpelRefinement == 0:
            // Full-pel only: no half-pel planes per reference. The lean tools (deblock, 8x8 DCT,
            // intra partitions, AQ, CABAC) add about 0.4 B/px over plain ultrafast: measured in
            // one process per configuration by X264MemoryCalibration, moving content, 720p
            // +0.4 MB, 1080p +0.7 MB (veryfast-lean vs ultrafast, at open + working set).
            perPixel = v.preset == "ultrafast" && v.tuning.isEmpty ? 10.5 : 10.9
        case "superfast": perPixel = 17
        case "veryfast": perPixel = 18.5
        default: perPixel = 22
        }
        let refs = Double(max(1, v.referenceFrames) - 1) * 2.4   // one more decoded frame each
        let threads = v.slicedThreads ? 0 : Double(max(0, v.threads - 1)) * 4
        return Int(Double(v.width * v.height) * (perPixel + refs + threads))
    }

    /// "12.3 MB".
    public static func megabytes(_ b: Int) -> String {
        let tenths = (b * 10 + (1 << 19)) >> 20
        return "\(tenths / 10).\(tenths % 10) MB"
    }

    public var totalBytes: Int {
        baselineBytes + videoEncoderBytes + audioEncoderBytes + framePoolBytes + audioBytes + stagingBytes
            + queueBytes + encoderWorkingBytes + captureBytes + replayBytes + networkReaderBytes
    }

    /// Kept free below the budget for what the plan cannot see exactly (allocator slack, thread
    /// stacks, library growth): 4% of the budget.
    /// scripts/soak mirrors this 1/25 when it sizes the replay soak's no-ring reference.
    public var headroomBytes: Int { budgetBytes / 25 }

    public var fits: Bool { budgetBytes <= 0 || totalBytes + headroomBytes <= budgetBytes }

    public var description: String {
        func mb(_ b: Int) -> String {
            let tenths = (b * 10 + (1 << 19)) >> 20
            return "\(tenths / 10).\(tenths % 10) MB"
        }
        var lines: [String] = []
        if !encoderChoice.isEmpty {
            lines.append("  x264 configuration                 \(encoderChoice)")
        }
        lines.append("  runtime baseline (measured)        \(mb(baselineBytes))")
        lines.append("  x264 at open (measured)            \(mb(videoEncoderBytes))")
        lines.append("  x264 working frames (planned)      \(mb(encoderWorkingBytes))")
        lines.append("  audio encoder at open (measured)   \(mb(audioEncoderBytes))")
        lines.append("  encoder input frame pool           \(mb(framePoolBytes))")
        lines.append("  audio lanes + mixer                \(mb(audioBytes))")
        lines.append("  interleaver staging                \(mb(stagingBytes))")
        lines.append("  send queues (byte caps)            \(mb(queueBytes))")
        if networkReaderBytes > 0 { lines.append("  RTMP readers (server input caps)   \(mb(networkReaderBytes))") }
        lines.append("  capture source buffers             \(mb(captureBytes))")
        if replaySeconds > 0 {
            let label = "replay ring (\(replaySeconds) s)".padding(toLength: 35)
            lines.append("  \(label)\(mb(replayBytes))")
        }
        lines.append("  headroom kept free (4%)            \(mb(headroomBytes))")
        var total = "  total                              \(mb(totalBytes)) of \(budgetBytes > 0 ? mb(budgetBytes) : "unlimited") budget"
        if budgetBytes > 0 {
            // The headroom is kept free on top of the total; say so, or a total just under the
            // budget followed by "DOES NOT FIT" reads as a contradiction.
            let needed = totalBytes + headroomBytes
            total += needed <= budgetBytes
                ? " (\(mb(needed)) with the headroom)"
                : " (\(mb(needed)) with the headroom: over by \(mb(needed - budgetBytes)))"
        }
        lines.append(total)
        lines.append("  budget from                        \(budgetSource)")
        if let n = replayLongestFit, !fits {
            lines.append(n > 0 ? "  replay: at most --replay-seconds \(n) fits this budget"
                               : "  replay: no replay buffer fits this budget")
        }
        return lines.joined(separator: "\n")
    }
}

private extension String {
    func padding(toLength n: Int) -> String { count >= n ? self + " " : self + String(repeating: " ", count: n - count) }
}
