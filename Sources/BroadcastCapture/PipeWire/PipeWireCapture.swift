import Glibc

/// Entry points for the CLI: build the PipeWire sources for a set of options, or list
/// what could be captured.
///
/// Errors: no reachable daemon is `.unavailable` (the message says what is missing and how to
/// fix it); a named node that does not exist is `.badInput` listing the nodes that do.
public enum PipeWireCapture {
    /// Checks the daemon and the named nodes, then returns the sources (not started):
    /// screen (if `options.screen`), app audio, mic, in that order.
    public static func makeSources(_ options: PipeWireOptions) throws(CaptureError) -> [CaptureSource] {
        var silent: [String] = []
        return try makeSources(options, silentLanes: &silent)
    }

    /// `makeSources`, and one line for each audio lane asked for that has no device to capture
    /// (no default sink or source in the graph): that lane sends silence, so the audio track
    /// still plays (the session's mixer fills it in real time).
    public static func makeSources(_ options: PipeWireOptions,
                                   silentLanes: inout [String]) throws(CaptureError) -> [CaptureSource] {
        let nodes = try PipeWireNodes.list()
        var sources: [CaptureSource] = []
        if options.screen {
            let node: PipeWireNode
            if let spec = options.screenNode {
                node = try PipeWireNodes.resolve(spec, in: nodes, kind: "Video/Source", flag: "--screen-node",
                                                 where: \.isVideoSource)
            } else if let first = nodes.first(where: \.isVideoSource) {
                node = first
            } else {
                throw CaptureError(.unavailable,
                    "no PipeWire Video/Source node to capture (nodes: \(nodes.count)); start a screen cast or pass --screen-node")
            }
            sources.append(PipeWireScreenSource(nodeName: node.name, bufferCount: options.videoBufferCount,
                                                videoSize: options.videoSize,
                                                durationSeconds: options.durationSeconds))
        }
        if options.appAudio {
            if let spec = options.appAudioNode {
                let node = try PipeWireNodes.resolve(spec, in: nodes, kind: "Audio/Sink", flag: "--app-audio",
                                                     where: \.isAudioSink)
                sources.append(PipeWireAudioSource(role: .appAudio, nodeName: node.name, channels: 2,
                                                   sampleRate: options.audioSampleRate,
                                                   durationSeconds: options.durationSeconds))
            } else if nodes.contains(where: \.isAudioSink) {
                // Only with a sink present: otherwise the session manager could link the
                // monitor stream to a microphone instead.
                sources.append(PipeWireAudioSource(role: .appAudio, nodeName: nil, channels: 2,
                                                   sampleRate: options.audioSampleRate,
                                                   durationSeconds: options.durationSeconds))
            } else {
                silentLanes.append("app audio is silence: PipeWire has no audio output (no Audio/Sink node) to capture")
            }
        }
        if options.mic {
            if let spec = options.micNode {
                let node = try PipeWireNodes.resolve(spec, in: nodes, kind: "Audio/Source", flag: "--mic",
                                                     where: \.isAudioSource)
                sources.append(PipeWireAudioSource(role: .mic, nodeName: node.name, channels: 1,
                                                   sampleRate: options.audioSampleRate,
                                                   durationSeconds: options.durationSeconds))
            } else if nodes.contains(where: \.isAudioSource) {
                sources.append(PipeWireAudioSource(role: .mic, nodeName: nil, channels: 1,
                                                   sampleRate: options.audioSampleRate,
                                                   durationSeconds: options.durationSeconds))
            } else {
                silentLanes.append("mic is silence: PipeWire has no microphone (no Audio/Source node) to capture")
            }
        }
        return sources
    }

    /// True when the session bus offers org.freedesktop.portal.Desktop with the ScreenCast
    /// interface (a desktop session); `--source auto` uses the portal then.
    public static func portalAvailable(timeoutSeconds: Double = 5) -> Bool {
        ScreenCastPortal.isAvailable(timeoutSeconds: timeoutSeconds)
    }

    /// The screen through the xdg-desktop-portal ScreenCast dialog (CreateSession, SelectSources,
    /// Start, OpenPipeWireRemote), then app audio and mic from the default daemon as in
    /// `makeSources`. The audio nodes are checked first, so a missing daemon or node fails
    /// before the user is asked anything.
    ///
    /// The restore token from an earlier run is sent (so the dialog can be skipped) and the
    /// new one stored, mode 0600. Errors: the dialog cancelled or denied is `.denied`; no
    /// session bus, no portal or no answer within `portalTimeoutSeconds` is `.unavailable`.
    public static func makePortalSources(_ options: PipeWireOptions) throws(CaptureError) -> [CaptureSource] {
        var silent: [String] = []
        return try makePortalSources(options, silentLanes: &silent)
    }

    /// `makePortalSources`, with a line for each audio lane that has no device (see `makeSources`).
    public static func makePortalSources(_ options: PipeWireOptions,
                                         silentLanes: inout [String]) throws(CaptureError) -> [CaptureSource] {
        var audioOptions = options
        audioOptions.screen = false
        let audio = options.appAudio || options.mic ? try makeSources(audioOptions, silentLanes: &silentLanes) : []
        guard options.screen else { return audio }
        let portal = try ScreenCastPortal(timeoutSeconds: options.portalTimeoutSeconds)
        let grant = try portal.start(cursor: options.cursor, restoreToken: options.portalRestoreToken?.load())
        if let token = grant.restoreToken, let store = options.portalRestoreToken {
            do { try store.store(token) } catch {
                close(grant.remoteFD)
                throw error
            }
        }
        let screen = PortalScreenSource(portal: portal, grant: grant, bufferCount: options.videoBufferCount,
                                        videoSize: options.videoSize, durationSeconds: options.durationSeconds)
        return [screen] + audio
    }

    /// The text for `--list-sources`: video sources, sinks (app audio) and sources (mic), with ids.
    public static func listSources() throws(CaptureError) -> String {
        PipeWireNodes.describe(try PipeWireNodes.list())
    }
}
