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

    public init(width: Int = 1280, height: Int = 720, fps: Int = 30, bitrateKbps: Int = 2500,
                maxBitrateKbps: Int? = nil, vbvBufferKbits: Int? = nil, keyframeIntervalSeconds: Int = 2,
                preset: String = "veryfast", tune: String = "zerolatency", profile: String = "high",
                threads: Int = 2, slicedThreads: Bool = true, referenceFrames: Int = 1) {
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
    }

    public static let `default` = VideoEncoderSettings()
}
