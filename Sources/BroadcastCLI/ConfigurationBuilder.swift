#if canImport(Glibc)
import Glibc
#endif
import BroadcastCapture
import BroadcastKit

/// Turns parsed options and the environment into a `BroadcastConfiguration` and its sources.
/// Every problem comes back as a `ConfigurationError` value; nothing here exits or connects.
package struct ConfigurationBuilder {
    /// The ingest used when neither `--url`, `$BROADCAST_URL` nor `--service` names one.
    package static let defaultURL = "rtmp://127.0.0.1:1935/live"

    /// `STREAM_KEY` and `BROADCAST_URL` are read from here (empty values count as unset).
    package var environment: [String: String]
    /// Makes the capture sources; replaceable so tests need no PipeWire or portal.
    package var makeSources: (CommandLineOptions) throws -> SourceFactory.Made
    /// The memory cgroup limit that lowers the default budget (nil: none); replaceable for tests.
    package var cgroupLimit: CgroupMemoryLimit?

    /// A builder reading `environment`, making sources with `makeSources`.
    package init(environment: [String: String],
                makeSources: @escaping (CommandLineOptions) throws -> SourceFactory.Made = SourceFactory.make,
                cgroupLimit: CgroupMemoryLimit? = CgroupMemoryLimit.current()) {
        self.environment = environment
        self.makeSources = makeSources
        self.cgroupLimit = cgroupLimit
    }

    /// Builds everything `o` asks for, in the order a user would fix things: key and URL,
    /// encoder limits, output paths, then the sources (which may open an input).
    package func build(_ o: CommandLineOptions) -> Result<BuiltConfiguration, ConfigurationError> {
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
        try checkPCM(o)
        try checkOutputs(o, totalKbps: video.bitrateKbps + audio.bitrateKbps)

        let made: SourceFactory.Made
        do {
            made = try makeSources(o)
        } catch let e as CaptureError {
            throw ConfigurationError(e.kind == .denied ? .connect : .usage, e.message)
        } catch let e as SourceFactory.NoScreen {
            throw ConfigurationError(.connect, e.description)
        } catch {
            throw ConfigurationError(.usage, "\(error)")
        }
        if let note = made.note, !o.quiet { notices.append(note) }
        notices += made.silentLanes

        var config = BroadcastConfiguration.default
        config.video = video
        config.audio = audio
        config.hasVideo = made.hasVideo
        config.hasAudio = made.hasAudio
        config.destinations = destinations
        let recordings = destinations.filter { if case .file = $0 { return true } else { return false } }.count
        let budget = MemoryBudget.resolve(explicit: o.memoryBudget, cgroup: cgroupLimit, recordings: recordings)
        config.memoryBudgetBytes = budget.bytes
        config.memoryBudgetSource = budget.source
        // The CLI is the whole process: its budget counts everything resident, runtime included.
        config.memoryBudgetScope = .process
        config.memoryBudgetScopeSource = "the CLI's default: the process is the broadcast"
        config.tlsCAFile = o.caFile
        config.captureReserveBytes = made.captureBytes
        config.audioMayNeedResampling = made.audioMayNeedResampling
        config.replay = ReplayOptionsCheck.settings(o)
        config.requireAllDestinations = o.requireAll
        config.bitrateFollows = o.bitrateFollows
        config.adaptiveBitrate = o.adaptiveBitrate
        config.enhancedRTMPConnect = o.enhancedRTMPConnect
        config.reconnect = ReconnectPolicy(maxAttempts: o.reconnectAttempts, initialDelaySeconds: o.reconnectDelay)
        return BuiltConfiguration(configuration: config, sources: made.sources, notices: notices)
    }

    /// The key: `--key`, then `--key-file`, then `$STREAM_KEY`; nil when none is given.
    func streamKey(_ o: CommandLineOptions) throws(ConfigurationError) -> String? {
        let key: String?
        let origin: String
        if let k = o.keyFromArgv {
            key = k; origin = "--key"
        } else if let f = o.keyFile {
            do { key = try SecretScrubber.readKeyFile(f) } catch { throw ConfigurationError(.usage, "\(error)") }
            origin = "--key-file \(f)"
        } else {
            key = env("STREAM_KEY"); origin = "$STREAM_KEY"
        }
        if let key { try Self.checkKey(key, origin: origin) }
        return key
    }

    /// Longest stream key accepted, in bytes: the library's (`StreamKeyRule.maxBytes`).
    static let maxKeyBytes = StreamKeyRule.maxBytes

    /// The library's key rule (`StreamKeyRule`: the words every front end reports), with the
    /// origin of the key in front. The message never holds the key.
    static func checkKey(_ key: String, origin: String) throws(ConfigurationError) {
        if let why = StreamKeyRule.refusal(key) { throw ConfigurationError(.usage, "\(origin): \(why)") }
    }

    /// `--pcm` feeds the app-audio lane next to a Y4M video source, in `--pcm-format`.
    func checkPCM(_ o: CommandLineOptions) throws(ConfigurationError) {
        if o.pcmFormatGiven && o.pcmPath == nil {
            throw ConfigurationError(.usage, "--pcm-format needs --pcm PATH")
        }
        guard o.pcmPath != nil else { return }
        guard case .y4m = o.source else {
            throw ConfigurationError(.usage, "--pcm needs --source y4m:PATH (raw PCM is the audio of a Y4M video)")
        }
        do { _ = try PCMFormat(parsing: o.pcmFormat) } catch { throw ConfigurationError(.usage, error.message) }
        // An input that cannot be read is a usage error before anything connects (exit 2), as
        // for --source y4m:PATH; a failure after the stream went live is exit 4.
        if let path = o.pcmPath, path != "-" {
            var st = stat()
            guard stat(path, &st) == 0 else {
                throw ConfigurationError(.usage, "--pcm \(path): \(SystemError.describe())")
            }
            if st.st_mode & S_IFMT == S_IFDIR {
                throw ConfigurationError(.usage, "--pcm \(path): is a directory, not raw PCM")
            }
            guard access(path, R_OK) == 0 else {
                throw ConfigurationError(.usage, "--pcm \(path): not readable: \(SystemError.describe())")
            }
        }
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
            // Each --url is one destination; without any, the one from $BROADCAST_URL, --service or the default.
            let specs = o.urls.isEmpty ? [DestinationSpec(url: ingestURL(o))] : o.urls
            var seen: [String] = []
            let passphrase = try srtPassphrase(o)
            for (i, spec) in specs.enumerated() {
                if WHIPURL.isWHIP(spec.url) {
                    destinations.append(try whipDestination(spec, index: i, key: key, seen: &seen))
                    continue
                }
                if SRTURL.isSRT(spec.url) {
                    destinations.append(try srtDestination(spec, index: i, key: key, passphrase: passphrase, seen: &seen))
                    continue
                }
                let parsed: RTMPURL
                do { parsed = try RTMPURL(parsing: spec.url) } catch { throw ConfigurationError(.usage, "\(error)") }
                var own = key
                if let f = spec.keyFile {
                    do { own = try SecretScrubber.readKeyFile(f, option: "--url key-file=") }
                    catch { throw ConfigurationError(.usage, "\(error)") }
                    try Self.checkKey(own ?? "", origin: "--url key-file=\(f)")
                }
                // A key in the URL's path is what gets published: it obeys --key's rules.
                if own == nil, let k = parsed.streamKey {
                    try Self.checkKey(k, origin: o.urls.isEmpty ? "$BROADCAST_URL (the key in its path)"
                                                                : "--url (the key in its path)")
                }
                if own == nil && parsed.streamKey == nil && !o.printMemoryPlan {
                    let which = specs.count > 1 ? " for destination \(i + 1) (\(parsed.redacted))" : ""
                    throw ConfigurationError(.usage, "no stream key\(which): set $STREAM_KEY, or use --key-file PATH or --key KEY "
                                             + "(or --url URL,key-file=PATH, or --no-publish with --record)")
                }
                // The same stream twice would only meet "already publishing" on the second connection.
                let identity = spec.url + "\u{0}" + (own ?? "")
                if seen.contains(identity) {
                    throw ConfigurationError(.usage, "--url: destination \(i + 1) (\(parsed.redacted)) repeats an earlier one "
                                             + "with the same key")
                }
                seen.append(identity)
                destinations.append(.rtmp(url: spec.url, streamKey: own ?? ""))
            }
        }
        if let r = o.recordPath { destinations.append(.file(path: r)) }
        // A replay buffer alone (local clipping) needs no destination: the stream ends in a discard sink.
        if destinations.isEmpty && o.replaySeconds != nil { destinations.append(.discard) }
        if destinations.isEmpty { throw ConfigurationError(.usage, "nothing to do: --no-publish needs --record PATH or --replay-seconds N") }
        return destinations
    }

    /// One WHIP destination: the key (`$STREAM_KEY`, `--key-file`, or the spec's own key file) is the
    /// bearer token; an endpoint may ask for none.
    func whipDestination(_ spec: DestinationSpec, index i: Int, key: String?,
                         seen: inout [String]) throws(ConfigurationError) -> DestinationSettings {
        let parsed: WHIPURL
        do { parsed = try WHIPURL(parsing: spec.url) } catch { throw ConfigurationError(.usage, "--url: \(error)") }
        var own = key
        if let f = spec.keyFile {
            do { own = try SecretScrubber.readKeyFile(f, option: "--url key-file=") } catch { throw ConfigurationError(.usage, "\(error)") }
        }
        let identity = "whip\u{0}" + spec.url
        if seen.contains(identity) {
            throw ConfigurationError(.usage, "--url: destination \(i + 1) (\(parsed.redacted)) repeats an earlier one")
        }
        seen.append(identity)
        return .whip(url: spec.url, token: own ?? "")
    }

    /// `--srt-passphrase-file`, read once for every srt:// destination.
    func srtPassphrase(_ o: CommandLineOptions) throws(ConfigurationError) -> String? {
        guard let f = o.srtPassphraseFile else { return nil }
        let p: String
        do { p = try SecretScrubber.readKeyFile(f, option: "--srt-passphrase-file") } catch { throw ConfigurationError(.usage, "\(error)") }
        guard SRTURL.passphraseLengths.contains(p.count) else {
            throw ConfigurationError(.usage, "--srt-passphrase-file \(f): the passphrase must be 10 to 79 characters")
        }
        return p
    }

    /// One srt:// destination. Unlike RTMP it needs no key: the key only fills the stream id when
    /// the URL has none, and a listener may ask for neither.
    func srtDestination(_ spec: DestinationSpec, index i: Int, key: String?, passphrase: String?,
                        seen: inout [String]) throws(ConfigurationError) -> DestinationSettings {
        let parsed: SRTURL
        do { parsed = try SRTURL(parsing: spec.url) } catch { throw ConfigurationError(.usage, "--url: \(error)") }
        var own = key
        if let f = spec.keyFile {
            do { own = try SecretScrubber.readKeyFile(f, option: "--url key-file=") } catch { throw ConfigurationError(.usage, "\(error)") }
        }
        if parsed.passphrase != nil {
            say("warning: an SRT passphrase in --url is visible to other local users (ps, /proc); prefer --srt-passphrase-file")
        }
        let identity = "srt\u{0}" + parsed.host + ":\(parsed.port)"
        if seen.contains(identity) {
            throw ConfigurationError(.usage, "--url: destination \(i + 1) (\(parsed.redacted)) repeats an earlier one")
        }
        seen.append(identity)
        return .srt(url: spec.url, streamKey: own ?? "", passphrase: passphrase)
    }

    /// `encoderSettings` as a value, for `--print-config`.
    package func encoderSettingsResult(_ o: CommandLineOptions)
        -> Result<(VideoEncoderSettings, AudioEncoderSettings, [String]), ConfigurationError> {
        do throws(ConfigurationError) { return .success(try encoderSettings(o)) } catch { return .failure(error) }
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
        // WebRTC carries Opus (the library makes the video constrained baseline for a WHIP destination).
        var codec = o.audioCodec
        let whip = o.publish && (o.urls.isEmpty ? [ingestURL(o)] : o.urls.map(\.url)).contains { WHIPURL.isWHIP($0) }
        if whip {
            if o.audioCodecGiven && codec == .aac {
                throw ConfigurationError(.usage, "--audio-codec aac: a WHIP destination carries Opus only (use --audio-codec opus)")
            }
            codec = .opus
        }
        var audioKbps = o.audioKbps ?? BroadcastLimits.defaultAudioBitrateKbps(codec)
        // One encode feeds every destination: each service's limits apply, the strictest wins.
        // Sizes and rates a service cannot carry are refused; bitrates above its limit for this
        // size and rate are capped, each cap announced by one line of the same form.
        for s in [o.service].compactMap({ $0 }) + o.urls.compactMap(\.service) {
            if o.resolution.height > s.maxHeight { throw ConfigurationError(.usage, "\(s.name) accepts at most \(s.maxHeight)p") }
            if o.fps > s.maxFPS { throw ConfigurationError(.usage, "\(s.name) accepts at most \(s.maxFPS) fps") }
            guard let cap = s.maxVideoKbps(height: o.resolution.height, fps: o.fps) else {
                throw ConfigurationError(.usage, "\(s.name) accepts no \(o.resolution.height)p at \(o.fps) fps")
            }
            if videoKbps > cap {
                notes.append("note: \(s.name) accepts at most \(cap) kbps video; using that")
                videoKbps = cap
            }
            if audioKbps > s.maxAudioKbps {
                notes.append("note: \(s.name) accepts at most \(s.maxAudioKbps) kbps audio; using that")
                audioKbps = s.maxAudioKbps
            }
            video.keyframeIntervalSeconds = min(video.keyframeIntervalSeconds, s.keyframeSeconds)
        }
        video.bitrateKbps = videoKbps
        video.maxBitrateKbps = videoKbps
        video.vbvBufferKbits = videoKbps
        if let t = o.x264Threads { video.threads = t }
        let audioRange = BroadcastLimits.audioBitrateKbps(codec)
        if !audioRange.contains(audioKbps) {
            throw ConfigurationError(.usage, "--audio-bitrate for \(codec == .aac ? "AAC" : "Opus") is at most \(audioRange.upperBound)")
        }
        return (video, AudioEncoderSettings(codec: codec, bitrateKbps: audioKbps), notes)
    }

    /// Output files must be writable, and the recording's disk roomy enough, before anything connects.
    func checkOutputs(_ o: CommandLineOptions, totalKbps: Int) throws(ConfigurationError) {
        do {
            if let p = o.statsJSON, !OutputPathCheck.isStandardOutput(p) { try OutputPathCheck.check(p, option: "--stats-json") }
            if let h = o.heartbeatPath { try OutputPathCheck.check(h, option: "--heartbeat") }
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
