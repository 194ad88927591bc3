import BroadcastCore

/// x264 parameters the session opens the encoder with.
public struct VideoEncoderSettings: Sendable, Equatable {
    public var width: Int
    public var height: Int
    public var fps: Int
    /// Target average bitrate (ABR with VBV cap).
    public var bitrateKbps: Int
    /// VBV max rate; defaults to the target bitrate (CBR-like, as ingests ask).
    public var maxBitrateKbps: Int
    /// VBV buffer; one second of max rate by default.
    public var vbvBufferKbits: Int
    public var keyframeIntervalSeconds: Int
    /// x264 preset name: ultrafast, superfast, veryfast, faster, fast, medium.
    public var preset: String
    /// x264 tune, "zerolatency" by default: no B-frames, no lookahead, no frame threads.
    public var tune: String
    /// "baseline", "main" or "high".
    public var profile: String
    /// Encoder threads; sliced threads keep per-thread frame memory down.
    public var threads: Int
    public var slicedThreads: Bool
    /// Reference frames; fewer saves one decoded frame of memory each.
    public var referenceFrames: Int
    /// Tools set explicitly on top of `preset` (`.lean` under a tight memory budget).
    public var tuning: X264Tuning

    public init(width: Int = 1280, height: Int = 720, fps: Int = 30, bitrateKbps: Int = 2500,
                maxBitrateKbps: Int? = nil, vbvBufferKbits: Int? = nil, keyframeIntervalSeconds: Int = 2,
                preset: String = "veryfast", tune: String = "zerolatency", profile: String = "high",
                threads: Int = 2, slicedThreads: Bool = true, referenceFrames: Int = 1,
                tuning: X264Tuning = .none) {
        self.width = width
        self.height = height
        self.fps = fps
        self.bitrateKbps = bitrateKbps
        self.maxBitrateKbps = maxBitrateKbps ?? bitrateKbps
        self.vbvBufferKbits = vbvBufferKbits ?? (maxBitrateKbps ?? bitrateKbps)
        self.keyframeIntervalSeconds = keyframeIntervalSeconds
        self.preset = preset
        self.tune = tune
        self.profile = profile
        self.threads = threads
        self.slicedThreads = slicedThreads
        self.referenceFrames = referenceFrames
        self.tuning = tuning
    }

    /// How full the VBV buffer starts, as a fraction of `vbvBufferKbits`: one frame's worth at the
    /// max rate. The buffer then fills at the max rate and each frame drains it, so the first second
    /// carries at most the max rate. x264's default (90 %) let the first frames spend most of a
    /// buffer on top of the rate: 6689 to 7490 kbit in the first second against a 6000 kbps cap
    /// (720p30 moving content, issue 40).
    public var vbvInitialFill: Double {
        min(0.9, Double(maxBitrateKbps) / Double(max(1, fps)) / Double(max(1, vbvBufferKbits)))
    }

    /// x264's `weightp` the encoder opens with: 0 (off) unless `tuning` sets it. The library turns
    /// it off whatever the preset, because its buffer becomes resident only at the first weighted
    /// frame, possibly long into a run (see `X264Encoder.configure`); a tuning that turns it on
    /// gets the weighted planes in the memory plan (`X264MemoryModel`).
    public var weightedPrediction: Int { tuning.weightedPrediction ?? 0 }

    /// x264's `subme` for `preset` unless `tuning` overrides it; 0 means no half-pel planes.
    /// (Preset values as in x264's common/base.c; unknown names count as medium.)
    public var subpelRefinement: Int {
        if let s = tuning.subpelRefinement { return s }
        switch preset {
        case "ultrafast": return 0
        case "superfast": return 1
        case "veryfast": return 2
        case "faster": return 4
        case "fast": return 6
        case "medium": return 7
        case "slow": return 8
        case "slower": return 9
        case "veryslow": return 10
        case "placebo": return 11
        default: return 7
        }
    }

    public static let `default` = VideoEncoderSettings()
}
