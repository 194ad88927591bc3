import BroadcastCapture
import BroadcastKit

/// Turns parsed options and the environment into a `BroadcastConfiguration` and its sources.
/// Every problem comes back as a `ConfigurationError` value; nothing here exits or connects.
public struct ConfigurationBuilder {
    /// The ingest used when neither `--url`, `$BROADCAST_URL` nor `--service` names one.
    public static let defaultURL = "rtmp://127.0.0.1:1935/live"

    /// `STREAM_KEY` and `BROADCAST_URL` are read from here (empty values count as unset).
    public var environment: [String: String]
    /// Makes the capture sources; replaceable so tests need no PipeWire or portal.
    public var makeSources: (CommandLineOptions) throws -> SourceFactory.Made
    /// The memory cgroup limit that lowers the default budget (nil: none); replaceable for tests.
    public var cgroupLimit: CgroupMemoryLimit?

    /// A builder reading `environment`, making sources with `makeSources`.
    public init(environment: [String: String],
                makeSources: @escaping (CommandLineOptions) throws -> SourceFactory.Made = SourceFactory.make,
                cgroupLimit: CgroupMemoryLimit? = CgroupMemoryLimit.current()) {
        self.environment = environment
        self.makeSources = makeSources
        self.cgroupLimit = cgroupLimit
    }

    /// Builds everything `o` asks for, in the order a user would fix things: key and URL,
    /// encoder limits, output paths, then the sources (which may open an input).
    public func build(_ o: CommandLineOptions) -> Result<BuiltConfiguration, ConfigurationError> {
        do throws(ConfigurationError) {
            return .success(try buildOrThrow(o))
        } catch {
            return .failure(error)
        }
    }

    private func buildOrThrow(_ o: CommandLineOptions) throws(ConfigurationError) -> BuiltConfiguration {
        var notices: [String] = []
        let destinations = try self.destinations(o)
        let (video, audio, capNotes) = try encoderSettings(o)
        notices += capNotes
        try checkOutputs(o, totalKbps: video.bitrateKbps + audio.bitrateKbps)

        let made: SourceFactory.Made
        do {
            made = try makeSources(o)
        } catch let e as CaptureError {
            throw ConfigurationError(e.kind == .denied ? .connect : .usage, e.message)
        } catch {
            throw ConfigurationError(.usage, "\(error)")
        }
        if let note = made.note, !o.quiet { notices.append(note) }

        var config = BroadcastConfiguration.default
        config.video = video
        config.audio = audio
        config.hasVideo = made.hasVideo
        config.hasAudio = made.hasAudio
        config.destinations = destinations
        let budget = MemoryBudget.resolve(explicit: o.memoryBudget, cgroup: cgroupLimit)
        config.memoryBudgetBytes = budget.bytes
        config.memoryBudgetSource = budget.source
        config.tlsCAFile = o.caFile
        config.captureReserveBytes = made.captureBytes
        config.replay = ReplayOptionsCheck.settings(o)
        config.reconnect = ReconnectPolicy(maxAttempts: o.reconnectAttempts, initialDelaySeconds: o.reconnectDelay)
        // The send queue holds at most ~4 s of media at the configured rates; the drop policy acts well before.
        config.congestion.maxBytes = max(512 << 10, (video.bitrateKbps + audio.bitrateKbps) * 1000 / 8 * 4)
        return BuiltConfiguration(configuration: config, sources: made.sources, notices: notices)
    }

    /// The key: `--key`, then `--key-file`, then `$STREAM_KEY`; nil when none is given.
    func streamKey(_ o: CommandLineOptions) throws(ConfigurationError) -> String? {
        if let k = o.keyFromArgv { return k }
        if let f = o.keyFile {
            do { return try SecretScrubber.readKeyFile(f) } catch { throw ConfigurationError(.usage, "\(error)") }
        }
        return env("STREAM_KEY")
    }

    /// The ingest: `--url`, then `$BROADCAST_URL`, then the `--service` preset, then the local default.
    func ingestURL(_ o: CommandLineOptions) -> String {
        o.url ?? env("BROADCAST_URL") ?? o.service?.url ?? Self.defaultURL
    }

    /// RTMP (unless `--no-publish`) and the recording. `--print-memory-plan` needs no key:
    /// it plans the RTMP queue but never connects.
    func destinations(_ o: CommandLineOptions) throws(ConfigurationError) -> [DestinationSettings] {
        var destinations: [DestinationSettings] = []
        let key = try streamKey(o)
        if o.publish {
            let url = ingestURL(o)
            let parsed: RTMPURL
            do { parsed = try RTMPURL(parsing: url) } catch { throw ConfigurationError(.usage, "\(error)") }
            if key == nil && parsed.streamKey == nil && !o.printMemoryPlan {
                throw ConfigurationError(.usage, "no stream key: set $STREAM_KEY, or use --key-file PATH or --key KEY "
                                         + "(or --no-publish with --record)")
            }
            destinations.append(.rtmp(url: url, streamKey: key ?? ""))
        }
        if let r = o.recordPath { destinations.append(.file(path: r)) }
        // A replay buffer alone (local clipping) needs no destination: the stream ends in a discard sink.
        if destinations.isEmpty && o.replaySeconds != nil { destinations.append(.discard) }
        if destinations.isEmpty { throw ConfigurationError(.usage, "nothing to do: --no-publish needs --record PATH or --replay-seconds N") }
        return destinations
    }

    /// x264 and audio settings from `--res`/`--fps`/bitrates, capped by the service preset.
    /// Returns the notices about caps applied.
    func encoderSettings(_ o: CommandLineOptions) throws(ConfigurationError)
        -> (VideoEncoderSettings, AudioEncoderSettings, [String]) {
        var notes: [String] = []
        var video = VideoEncoderSettings.default
        video.width = o.resolution.width
        video.height = o.resolution.height
        video.fps = o.fps
        video.preset = o.preset
        var videoKbps = o.videoKbps ?? o.resolution.defaultVideoKbps(fps: o.fps)
        var audioKbps = o.audioKbps ?? (o.audioCodec == .opus ? 96 : 128)
        if let s = o.service {
            if videoKbps > s.maxVideoKbps {
                notes.append("note: \(s.name) accepts at most \(s.maxVideoKbps) kbps video; using that")
                videoKbps = s.maxVideoKbps
            }
            if audioKbps > s.maxAudioKbps { audioKbps = s.maxAudioKbps }
            if o.resolution.height > s.maxHeight { throw ConfigurationError(.usage, "\(s.name) accepts at most \(s.maxHeight)p") }
            if o.fps > s.maxFPS { throw ConfigurationError(.usage, "\(s.name) accepts at most \(s.maxFPS) fps") }
            video.keyframeIntervalSeconds = s.keyframeSeconds
        }
        video.bitrateKbps = videoKbps
        video.maxBitrateKbps = videoKbps
        video.vbvBufferKbits = videoKbps
        if let t = o.x264Threads { video.threads = t }
        if o.audioCodec == .aac && audioKbps > 320 {
            throw ConfigurationError(.usage, "--audio-bitrate for AAC is at most 320")
        }
        return (video, AudioEncoderSettings(codec: o.audioCodec, bitrateKbps: audioKbps), notes)
    }

    /// Output files must be writable, and the recording's disk roomy enough, before anything connects.
    func checkOutputs(_ o: CommandLineOptions, totalKbps: Int) throws(ConfigurationError) {
        do {
            if let p = o.statsJSON { try OutputPathCheck.check(p, option: "--stats-json") }
            if let r = o.recordPath { try OutputPathCheck.check(r, option: "--record") }
        } catch {
            throw ConfigurationError(.usage, error.description)
        }
        try ReplayOptionsCheck.check(o)
        if let r = o.recordPath {
            do { try RecordSpaceCheck.check(path: r, bitrateKbps: totalKbps, minFreeBytes: o.recordMinFree) }
            catch { throw ConfigurationError(.usage, error.description) }
        }
    }

    private func env(_ name: String) -> String? {
        guard let v = environment[name], !v.isEmpty else { return nil }
        return v
    }
}
