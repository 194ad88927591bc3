import BroadcastCapture
import BroadcastKit

/// Builds the capture sources the options ask for.
package enum SourceFactory {
    /// The sources made, what they deliver, and a notice for the user.
    package struct Made {
        /// Made, not started.
        package var sources: [CaptureSource]
        /// Which lanes the sources feed.
        package var hasVideo: Bool
        package var hasAudio: Bool
        /// A notice for the user (e.g. the fallback to the test source).
        package var note: String?
        /// One line per audio lane that sends silence because it has no device (shown even
        /// with --quiet: the stream's audio is not what the user may expect).
        package var silentLanes: [String] = []
        /// Whether audio may arrive at 44.1 kHz (PipeWire negotiates; the test source and a PCM
        /// file state their rate), so the plan reserves the lanes' resamplers only then.
        package var audioMayNeedResampling = true

        package init(sources: [CaptureSource], hasVideo: Bool, hasAudio: Bool, note: String?) {
            self.sources = sources
            self.hasVideo = hasVideo
            self.hasAudio = hasAudio
            self.note = note
        }

        /// Capture buffers the sources keep resident, for the memory plan.
        package var captureBytes: Int { sources.reduce(0) { $0 + $1.plannedResidentBytes } }
    }

    /// `--source auto` found neither a desktop portal nor a PipeWire screen: exit 3, one line.
    package struct NoScreen: Error, CustomStringConvertible {
        package var description: String {
            "nothing to capture: no desktop screen-capture portal and no PipeWire screen node; "
                + "use --source test for the test pattern, or --source screen-node --screen-node NAME|ID "
                + "(see --list-sources)"
        }
    }

    /// Makes the sources for `o` (opens a Y4M input to read its header; asks PipeWire or the portal).
    package static func make(_ o: CommandLineOptions) throws -> Made {
        switch o.source {
        case .test:
            var made = Made(sources: [try testSource(o)], hasVideo: true, hasAudio: testHasAudio(o), note: nil)
            made.audioMayNeedResampling = false   // the CLI's test source is 48 kHz
            return made
        case .auto:
            // The screen through the desktop portal when the session offers one, else the first
            // PipeWire screen node. With neither, stop: colour bars on a channel are never what
            // a streamer who asked for nothing in particular wanted (the test source needs --source test).
            let p = pipeWireOptions(o)
            var silent: [String] = []
            if PipeWireCapture.portalAvailable() {
                let sources = try PipeWireCapture.makePortalSources(p, silentLanes: &silent)
                var made = Made(sources: sources, hasVideo: true, hasAudio: p.appAudio || p.mic,
                                note: "capturing the screen through the desktop portal")
                made.silentLanes = silent
                return made
            }
            var sources: [CaptureSource] = []
            var failure: CaptureError?
            do { sources = try PipeWireCapture.makeSources(p, silentLanes: &silent) } catch { failure = error }
            if let failure { throw failure.kind == .unavailable ? NoScreen() : failure }
            var made = Made(sources: sources, hasVideo: true, hasAudio: p.appAudio || p.mic,
                            note: "no desktop portal; capturing the first PipeWire screen node (see --list-sources)")
            made.silentLanes = silent
            return made
        case .screen, .screenNode:
            let p = pipeWireOptions(o)
            if o.source == .screenNode && o.screenNode == nil {
                throw UsageError("--source screen-node needs --screen-node NAME|ID (see --list-sources)")
            }
            // --source screen without --screen-node asks the portal (the user picks a screen);
            // without a portal on the session bus it falls back to the first Video/Source node.
            let viaPortal = o.source == .screen && o.screenNode == nil && PipeWireCapture.portalAvailable()
            var silent: [String] = []
            let sources = viaPortal ? try PipeWireCapture.makePortalSources(p, silentLanes: &silent)
                : try PipeWireCapture.makeSources(p, silentLanes: &silent)
            var made = Made(sources: sources, hasVideo: true, hasAudio: p.appAudio || p.mic, note: nil)
            made.silentLanes = silent
            return made
        case .y4m(let path):
            return try y4mSources(path: path, o)
        }
    }

    static func pipeWireOptions(_ o: CommandLineOptions) -> PipeWireOptions {
        var p = PipeWireOptions()
        p.screenNode = o.screenNode
        p.appAudio = !o.noAppAudio
        p.appAudioNode = o.appAudioNode
        p.mic = !o.noMic
        p.micNode = o.micNode
        p.cursor = o.cursor == "hidden" ? .hidden : .embedded
        p.durationSeconds = o.duration
        p.videoSize = (o.resolution.width, o.resolution.height)
        return p
    }

    /// The test source's lanes follow --no-app-audio and --no-mic as capture does: with both,
    /// the stream is video-only (no audio track at all, rather than an empty one).
    static func testHasAudio(_ o: CommandLineOptions) -> Bool { !o.noAppAudio || !o.noMic }

    static func testSource(_ o: CommandLineOptions) throws -> CaptureSource {
        var t = TestSourceSettings()
        t.appAudio = !o.noAppAudio
        t.micAudio = !o.noMic
        t.width = o.resolution.width
        t.height = o.resolution.height
        t.fps = o.fps
        t.pixelFormat = o.testPixelFormat
        t.pattern = o.testPattern
        t.rotateEverySeconds = o.testRotateEvery
        t.audioSkewPPM = o.skewPPM
        t.jitterMs = o.jitterMs
        t.micDelayMs = o.micDelayMs
        if let n = o.appBufferFrames { t.appBufferFrames = n }
        t.gapAtSeconds = o.gapAt
        t.gapMs = o.gapMs
        t.durationSeconds = o.duration
        if let e = t.validate() { throw UsageError(e.message) }
        return try TestSource(settings: t)
    }
}
