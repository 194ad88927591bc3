import BroadcastCapture
import BroadcastKit

/// Builds the capture sources the options ask for.
enum SourceFactory {
    struct Made {
        var sources: [CaptureSource]
        var hasVideo: Bool
        var hasAudio: Bool
        var note: String?
        /// Frame buffers the sources hold, for the memory plan.
        var captureBytes: Int = 0
    }

    static func make(_ o: CommandLineOptions) throws -> Made {
        var made = try makeSources(o)
        let w = o.resolution.width, h = o.resolution.height
        switch o.source {
        case .test, .auto where made.note?.contains("test source") == true:
            // One frame canvas at the output size (4 bytes a pixel for packed formats).
            made.captureBytes = o.testPixelFormat == .i420 || o.testPixelFormat == .nv12 ? w * h * 3 / 2 : w * h * 4
        case .y4m:
            made.captureBytes = w * h * 3 / 2
        default:
            // PipeWire: two mapped BGRx buffers, assumed at the output size.
            made.captureBytes = 2 * w * h * 4
        }
        return made
    }

    private static func makeSources(_ o: CommandLineOptions) throws -> Made {
        switch o.source {
        case .test:
            return Made(sources: [try testSource(o)], hasVideo: true, hasAudio: true, note: nil)
        case .auto:
            // The screen through the desktop portal when the session offers one; otherwise
            // say so and use the test source.
            if PipeWireCapture.portalAvailable() {
                let p = pipeWireOptions(o)
                let sources = try PipeWireCapture.makePortalSources(p)
                return Made(sources: sources, hasVideo: true, hasAudio: p.appAudio || p.mic,
                            note: "capturing the screen through the desktop portal")
            }
            return Made(sources: [try testSource(o)], hasVideo: true, hasAudio: true,
                        note: "no desktop screen-capture portal available; using the test source (--source test)")
        case .screen, .screenNode:
            let p = pipeWireOptions(o)
            if o.source == .screenNode && o.screenNode == nil {
                throw UsageError("--source screen-node needs --screen-node NAME|ID (see --list-sources)")
            }
            // --source screen without --screen-node asks the portal (the user picks a screen);
            // without a portal on the session bus it falls back to the first Video/Source node.
            let viaPortal = o.source == .screen && o.screenNode == nil && PipeWireCapture.portalAvailable()
            let sources = viaPortal ? try PipeWireCapture.makePortalSources(p) : try PipeWireCapture.makeSources(p)
            return Made(sources: sources, hasVideo: true, hasAudio: p.appAudio || p.mic, note: nil)
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
        return p
    }

    static func testSource(_ o: CommandLineOptions) throws -> CaptureSource {
        var t = TestSourceSettings()
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
