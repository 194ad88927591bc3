import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastFLV
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording

/// Where a session sends its FLV.
public enum DestinationSettings: Sendable {
    /// Publish over RTMP: `url` is the ingest base (rtmp://host[:port]/app), `streamKey` the secret.
    case rtmp(url: String, streamKey: String)
    /// Send MPEG-TS over SRT to a listener: `url` is `srt://host:port[?streamid=…&passphrase=…&latency=MS]`;
    /// `streamKey` fills the stream id when the URL has none; `passphrase` (10 to 79 characters)
    /// wins over one in the URL.
    case srt(url: String, streamKey: String, passphrase: String? = nil)
    /// Publish over WebRTC to a WHIP endpoint (RFC 9725): `url` is `https://…` (or `http://` for
    /// loopback and tests), `token` the bearer token (`$STREAM_KEY`; empty: none). Needs Opus audio.
    case whip(url: String, token: String)
    /// Write an FLV file.
    case file(path: String)
    /// Build every tag and throw it away (benchmarks, allocation probes).
    case discard
    /// Your own sink (e.g. an in-process relay); called from its destination's sender thread.
    case custom(any TagSink & Sendable)
}

extension DestinationSettings {
    /// A network destination by its URL's scheme: `https://`/`http://` is a WHIP endpoint;
    /// `srt://` sends MPEG-TS over SRT; anything else
    /// is RTMP (`rtmp://`, `rtmps://`), checked when the session prepares.
    public static func network(url: String, streamKey: String) -> DestinationSettings {
        if WHIPURL.isWHIP(url) { return .whip(url: url, token: streamKey) }
        return SRTURL.isSRT(url) ? .srt(url: url, streamKey: streamKey) : .rtmp(url: url, streamKey: streamKey)
    }
}

/// Everything a `BroadcastSession` needs; start from `.default` and change what differs.
public struct BroadcastConfiguration: Sendable {
    public var video: VideoEncoderSettings
    public var audio: AudioEncoderSettings
    public var hasVideo: Bool
    public var hasAudio: Bool
    public var destinations: [DestinationSettings]
    /// The send queue's drop thresholds and byte cap (`.bitrateSized`, the default, sizes the cap
    /// from the bitrates: see `sendQueueBytes`).
    public var congestion: CongestionPolicy
    /// Pending video frames before `encoder_busy` drops (the issue's limit is 2).
    public var maxPendingVideoFrames: Int
    /// Hard memory budget in bytes (0 disables the check).
    public var memoryBudgetBytes: Int
    /// Where the budget came from, shown on the plan's budget line (see `MemoryBudget.resolve`).
    public var memoryBudgetSource: String = "configuration"
    /// What the budget counts: the whole process (the CLI's, and this type's, default) or the
    /// session's own memory (the C ABI's default for embedders). See `MemoryBudgetScope`.
    public var memoryBudgetScope: MemoryBudgetScope = .process
    /// Why that scope applies, shown on the plan's `budget scope` row.
    public var memoryBudgetScopeSource: String = "configuration"
    /// Adapt the x264 bitrate to measured throughput when the send queue backs up.
    public var adaptiveBitrate: Bool
    /// Seconds to wait for a TCP connect.
    public var connectTimeoutSeconds: Int
    /// Written into onMetaData's `encoder` field.
    public var encoderName: String
    /// When the memory plan does not fit, try lighter x264 presets instead of refusing.
    public var allowPresetDowngrade: Bool = true
    /// Memory the capture source holds outside the session (its frame buffers), for the plan.
    public var captureReserveBytes: Int = 0
    /// Whether audio may arrive at 44.1 kHz. False when every audio source is known to deliver
    /// 48 kHz: the lanes then reserve no resampler (0.9 MB each in the memory plan) and a 44.1 kHz
    /// buffer is dropped as malformed.
    public var audioMayNeedResampling: Bool = true
    /// Extra CA certificates (PEM) trusted for rtmps://, besides the system store.
    public var tlsCAFile: String? = nil
    /// How RTMP destinations retry after a lost connection.
    public var reconnect: ReconnectPolicy = .default
    /// The rolling replay buffer (off by default).
    public var replay: ReplaySettings = .default
    /// Every destination must stay up: any lost one fails the run (else only losing all network
    /// publishers does, and a lost one is a warning).
    public var requireAllDestinations: Bool = false
    /// With several network publishers, which one the adaptive bitrate follows.
    public var bitrateFollows: BitrateFollows = .primary
    /// Announce Enhanced RTMP v2 support (`capsEx`) in RTMP connect and honour the server's
    /// reconnect requests; false sends a plain connect for servers that refuse unknown fields.
    public var enhancedRTMPConnect: Bool = true
    /// What `process` does when a lane is full: drop at once (live sources, the default) or
    /// wait for room (producers faster than real time).
    public var backpressure: Backpressure = .drop

    public init(video: VideoEncoderSettings = .default, audio: AudioEncoderSettings = .default,
                hasVideo: Bool = true, hasAudio: Bool = true, destinations: [DestinationSettings] = [],
                congestion: CongestionPolicy = .bitrateSized, maxPendingVideoFrames: Int = 2,
                memoryBudgetBytes: Int = 50 << 20, adaptiveBitrate: Bool = true,
                connectTimeoutSeconds: Int = 5, encoderName: String = "broadcast (BroadcastKit)") {
        self.video = video
        self.audio = audio
        self.hasVideo = hasVideo
        self.hasAudio = hasAudio
        self.destinations = destinations
        self.congestion = congestion
        self.maxPendingVideoFrames = maxPendingVideoFrames
        self.memoryBudgetBytes = memoryBudgetBytes
        self.adaptiveBitrate = adaptiveBitrate
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.encoderName = encoderName
    }

    public static let `default` = BroadcastConfiguration()

    /// Checks every value against `BroadcastLimits`, and each network destination's URL and key
    /// (`StreamKeyRule`); `prepare()` and `start()` call it. The message names the value and its
    /// range, or what is wrong with the URL or key (never the key itself).
    public func validate() throws(BroadcastError) {
        typealias L = BroadcastLimits
        func require(_ ok: Bool, _ message: @autoclosure () -> String) throws(BroadcastError) {
            if !ok { throw .configuration(message()) }
        }
        if hasVideo {
            let v = video
            try require(L.width.contains(v.width) && L.height.contains(v.height) && v.width % 2 == 0 && v.height % 2 == 0,
                        "video size \(v.width)x\(v.height): width and height must be even, \(L.text(L.width)) x \(L.text(L.height))")
            try require(L.fps.contains(v.fps), "fps \(v.fps) outside \(L.text(L.fps))")
            try require(L.videoBitrateKbps.contains(v.bitrateKbps),
                        "video bitrate \(v.bitrateKbps) kbps outside \(L.text(L.videoBitrateKbps))")
            try require(L.keyframeIntervalSeconds.contains(v.keyframeIntervalSeconds),
                        "keyframe interval \(v.keyframeIntervalSeconds) s outside \(L.text(L.keyframeIntervalSeconds))")
            try require(X264Preset(rawValue: v.preset) != nil, "unknown x264 preset '\(v.preset)' (\(X264Preset.names))")
        }
        if hasAudio {
            let range = L.audioBitrateKbps(audio.codec)
            try require(range.contains(audio.bitrateKbps),
                        "\(audio.codec == .aac ? "AAC" : "Opus") bitrate \(audio.bitrateKbps) kbps outside \(L.text(range))")
        }
        try require(L.replaySeconds.contains(replay.seconds),
                    "replay seconds \(replay.seconds) outside \(L.text(L.replaySeconds)) (0 = off)")
        if let why = reconnect.refusal { throw .configuration(why) }
        // URLs and keys: the same check and words as the CLI and the C ABI.
        try DestinationValidator.check(self)
    }

    /// The send queue's hard byte cap for this configuration: `congestion.maxBytes`, or when that
    /// is `CongestionPolicy.sizedByBitrate`, about 4 s of media at the configured rates.
    package var sendQueueBytes: Int {
        if congestion.maxBytes != CongestionPolicy.sizedByBitrate { return congestion.maxBytes }
        return CongestionPolicy.sendQueueBytes(videoKbps: hasVideo ? video.bitrateKbps : 0,
                                               audioKbps: hasAudio ? audio.bitrateKbps : 0)
    }
}
