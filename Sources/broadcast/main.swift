#if canImport(Glibc)
import Glibc
#endif
import BroadcastCapture
import BroadcastKit

/// Prints one line to stderr, prefixed so users (and tests) can tell it is ours.
func say(_ message: String) { Log.line("broadcast: \(message)") }

func fail(_ code: ExitCode, _ message: String) -> Never {
    say(message)
    exit(code.rawValue)
}

// Crash output must not carry the stream key: Swift's backtracer dumps the memory that
// registers point at. Unless the user configured it, re-exec once with register and image
// dumps off (the symbolicated stack stays).
if getenv("SWIFT_BACKTRACE") == nil {
    setenv("SWIFT_BACKTRACE", "registers=none,images=none,sanitize=yes", 1)
    // The resolved path keeps the process name "broadcast" (exec of /proc/self/exe would be "exe").
    var path = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &path, path.count - 1)
    if n > 0 { execv(path, CommandLine.unsafeArgv) }
    // If exec fails, carry on with the default backtracer settings.
}

// Two malloc arenas, transparent huge pages off: the same levers the benchmarks and embedders get.
ProcessTuning.apply()

let options: CommandLineOptions
do {
    options = try CommandLineOptions.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    fail(.usage, "\(error)")
}
if options.help { print(Usage.text); exit(0) }
if options.version { print(Usage.version); exit(0) }
if options.listSources {
    do { print(try PipeWireCapture.listSources()); exit(0) } catch { fail(.usage, error.message) }
}

// The key: --key, then --key-file, then $STREAM_KEY. Never printed.
var streamKey: String?
if let k = options.keyFromArgv {
    SecretScrubber.scrubArgv(value: k)
    if !options.quiet {
        say("warning: --key on the command line is readable by local users (ps, /proc); prefer $STREAM_KEY or --key-file")
    }
    streamKey = k
} else if let f = options.keyFile {
    do { streamKey = try SecretScrubber.readKeyFile(f) } catch { fail(.usage, "\(error)") }
} else if let e = getenv("STREAM_KEY"), e.pointee != 0 {
    streamKey = String(cString: e)
}

// The destination: --url, $BROADCAST_URL, the service preset, the local default ingest.
var destinations: [DestinationSettings] = []
var ingestURL = "rtmp://127.0.0.1:1935/live"
if let u = options.url {
    ingestURL = u
} else if let e = getenv("BROADCAST_URL"), e.pointee != 0 {
    ingestURL = String(cString: e)
} else if let s = options.service {
    ingestURL = s.url
}
if options.publish {
    let parsed: RTMPURL
    do { parsed = try RTMPURL(parsing: ingestURL) } catch { fail(.usage, "\(error)") }
    if streamKey == nil && parsed.streamKey == nil {
        fail(.usage, "no stream key: set $STREAM_KEY, or use --key-file PATH or --key KEY (or --no-publish with --record)")
    }
    destinations.append(.rtmp(url: ingestURL, streamKey: streamKey ?? ""))
}
if let r = options.recordPath { destinations.append(.file(path: r)) }
if destinations.isEmpty { fail(.usage, "nothing to do: --no-publish needs --record PATH") }

// Encoder settings from --res/--fps/--video-bitrate, capped by the service preset.
var video = VideoEncoderSettings.default
video.width = options.resolution.width
video.height = options.resolution.height
video.fps = options.fps
video.preset = options.preset
var videoKbps = options.videoKbps ?? options.resolution.defaultVideoKbps(fps: options.fps)
var audioKbps = options.audioKbps ?? (options.audioCodec == .opus ? 96 : 128)
if let s = options.service {
    if videoKbps > s.maxVideoKbps { say("note: \(s.name) accepts at most \(s.maxVideoKbps) kbps video; using that"); videoKbps = s.maxVideoKbps }
    if audioKbps > s.maxAudioKbps { audioKbps = s.maxAudioKbps }
    if options.resolution.height > s.maxHeight { fail(.usage, "\(s.name) accepts at most \(s.maxHeight)p") }
    if options.fps > s.maxFPS { fail(.usage, "\(s.name) accepts at most \(s.maxFPS) fps") }
    video.keyframeIntervalSeconds = s.keyframeSeconds
}
video.bitrateKbps = videoKbps
video.maxBitrateKbps = videoKbps
video.vbvBufferKbits = videoKbps
if let t = options.x264Threads { video.threads = t }
if options.audioCodec == .aac && audioKbps > 320 { fail(.usage, "--audio-bitrate for AAC is at most 320") }

if let r = options.recordPath {
    do { try RecordSpaceCheck.check(path: r, bitrateKbps: videoKbps + audioKbps, minFreeBytes: options.recordMinFree) }
    catch { fail(.usage, error.description) }
}

let made: SourceFactory.Made
do {
    made = try SourceFactory.make(options)
} catch let e as CaptureError {
    fail(e.kind == .denied ? .connect : .usage, e.message)
} catch {
    fail(.usage, "\(error)")
}
if let note = made.note, !options.quiet { say(note) }

var config = BroadcastConfiguration.default
config.video = video
config.audio = AudioEncoderSettings(codec: options.audioCodec, bitrateKbps: audioKbps)
config.hasVideo = made.hasVideo
config.hasAudio = made.hasAudio
config.destinations = destinations
config.memoryBudgetBytes = options.memoryBudget
config.tlsCAFile = options.caFile
config.captureReserveBytes = made.captureBytes
config.reconnect = ReconnectPolicy(maxAttempts: options.reconnectAttempts, initialDelaySeconds: options.reconnectDelay)
// The send queue holds at most ~4 s of media at the configured rates; the drop policy acts well before.
config.congestion.maxBytes = max(512 << 10, (videoKbps + audioKbps) * 1000 / 8 * 4)

let session = BroadcastSession(configuration: config)
if options.printMemoryPlan {
    do {
        let plan = try session.prepare()
        let preset = session.effectiveVideoSettings?.preset ?? video.preset
        print("memory plan for \(video.width)x\(video.height)@\(video.fps) x264 \(preset), \(videoKbps) kbps:")
        if let note = session.downgradeNote { print(note) }
        print(plan.description)
        print(plan.fits ? "fits" : "DOES NOT FIT, even with the lightest x264 preset: lower --res or raise --memory-budget")
        exit(plan.fits ? 0 : ExitCode.usage.rawValue)
    } catch {
        fail(ExitCode(rawValue: error.exitCode) ?? .usage, error.description)
    }
}

session.onEvent = { event in
    switch event {
    case .warning(let m): say("warning: \(m)")
    case .failed(let m): say("error: \(m)")
    case .reconnecting(let attempt, let delay): say("reconnecting (attempt \(attempt), in \(fixed(delay, 1)) s)")
    case .reconnected(let n): say("reconnected (\(n) so far)")
    case .started, .finished: break
    }
}

Signals.install()
do {
    try session.start()
} catch {
    fail(ExitCode(rawValue: error.exitCode) ?? .connect, error.description)
}
if let note = session.downgradeNote { say("note: \(note)") }
if !options.quiet {
    say("live: \(session.destinationNames.joined(separator: ", ")) \(video.width)x\(video.height)@\(video.fps) "
        + "x264 \(session.effectiveVideoSettings?.preset ?? video.preset) \(videoKbps) kbps + \(options.audioCodec.rawValue) \(audioKbps) kbps from \(made.sources.map(\.description).joined(separator: ", "))")
}

let reporter: StatsReporter
do {
    reporter = try StatsReporter(jsonPath: options.statsJSON, statusLine: !options.quiet && isatty(2) != 0)
} catch {
    session.finish()
    fail(.usage, "\(error)")
}

for source in made.sources {
    do {
        try source.start(into: session)
    } catch {
        made.sources.forEach { $0.stop() }
        session.finish()
        fail(error.kind == .denied ? .connect : .usage, error.message)
    }
}

// Main loop: a 100 ms tick for signals, duration, end of input and failures; stats once a second.
let startNs = MediaTime.now()
let limitNs: Int64? = options.duration.map { startNs + Int64($0 * 1e9) + 3_000_000_000 }
var nextReport = startNs + 1_000_000_000
var exitCode = ExitCode.success
var exitMessage: String?
while true {
    var ts = timespec(tv_sec: 0, tv_nsec: 100_000_000)
    nanosleep(&ts, nil)
    let now = MediaTime.now()
    if Signals.stopRequested { break }
    if let f = session.failure { exitCode = ExitCode(rawValue: f.exitCode) ?? .streaming; exitMessage = f.description; break }
    if made.sources.allSatisfy({ $0.waitUntilFinished(timeoutNanoseconds: 0) }) {
        if let e = made.sources.compactMap({ $0.error }).first {
            exitCode = e.kind == .badInput ? .usage : .streaming
            exitMessage = e.message
        }
        break
    }
    if let l = limitNs, now >= l { break }
    if now >= nextReport {
        nextReport += 1_000_000_000
        let snap = session.stats.snapshot()
        reporter.report(snap, state: session.statusText, reconnects: snap.reconnects, latency: session.videoLatencyMs)
    }
}
for source in made.sources { source.stop() }
session.finish()
let finalStats = session.stats.snapshot()
reporter.report(finalStats, state: "finished", reconnects: finalStats.reconnects, latency: session.videoLatencyMs)
reporter.endStatusLine()
if exitCode == .success, let f = session.failure { exitCode = ExitCode(rawValue: f.exitCode) ?? .streaming; exitMessage = f.description }
if let m = exitMessage { say(exitCode == .success ? m : "error: \(m)") }
if !options.quiet {
    let s = session.stats.snapshot()
    say("finished: \(s.videoFramesSent) video frames, \(s.audioFramesSent) audio frames, \(s.bytesSent) bytes sent, "
        + "\(s.totalDrops) dropped, peak RSS \(fixed(Double(ProcessMemory.peakResidentBytes()) / 1048576, 1)) MB")
}
exit(exitCode.rawValue)
