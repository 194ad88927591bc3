/// Entry points for the CLI: build the PipeWire sources for a set of options, or list
/// what could be captured.
///
/// Errors: no reachable daemon is `.unavailable` (the message says what is missing and how to
/// fix it); a named node that does not exist is `.badInput` listing the nodes that do.
public enum PipeWireCapture {
    /// Checks the daemon and the named nodes, then returns the sources (not started):
    /// screen (if `options.screen`), app audio, mic, in that order.
    public static func makeSources(_ options: PipeWireOptions) throws(CaptureError) -> [CaptureSource] {
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
            }
        }
        return sources
    }

    /// The text for `--list-sources`: video sources, sinks (app audio) and sources (mic), with ids.
    public static func listSources() throws(CaptureError) -> String {
        PipeWireNodes.describe(try PipeWireNodes.list())
    }
}
