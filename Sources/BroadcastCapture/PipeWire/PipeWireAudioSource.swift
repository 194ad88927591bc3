import BroadcastKit

/// Captures PipeWire audio on its own thread: app audio from a sink's monitor
/// (`stream.capture.sink=true`) onto `.appAudio`, or a microphone source onto `.micAudio`.
/// Interleaved F32 (or S16) at the preferred rate (48 kHz); PipeWire converts whatever the
/// node produces.
public final class PipeWireAudioSource: CaptureSource {
    /// Which audio to capture.
    public enum Role: Sendable {
        /// The monitor of an Audio/Sink (desktop audio); lands on `.appAudio`.
        case appAudio
        /// An Audio/Source (microphone); lands on `.micAudio`.
        case mic
    }

    let stream: PipeWireStream
    private let label: String

    /// - Parameters:
    ///   - role: app audio (sink monitor) or mic.
    ///   - nodeName: the sink/source `node.name`; nil for the default one.
    ///   - channels: 2 for app audio, 1 or 2 for the mic.
    public init(role: Role, nodeName: String?, channels: Int = 2, sampleRate: Int = 48_000, remoteFD: Int32 = -1,
                durationSeconds: Double? = nil) {
        stream = PipeWireStream(kind: role == .appAudio ? .sinkMonitor : .source, target: nodeName,
                                remoteFD: remoteFD,
                                streamName: role == .appAudio ? "broadcast-app-audio" : "broadcast-mic",
                                channels: channels, rate: sampleRate, durationSeconds: durationSeconds)
        label = (role == .appAudio ? "pipewire app audio " : "pipewire mic ") + (nodeName ?? "(default)")
    }

    public var description: String { label }
    /// Resident in this process for the memory plan: the stream's PipeWire client
    /// (`PipeWireStream.clientResidentBytes`); audio buffers are mapped from the daemon.
    public var plannedResidentBytes: Int { PipeWireStream.clientResidentBytes }
    public func start(into sink: SampleBufferSink) throws(CaptureError) { try stream.start(into: sink) }
    public func stop() { stream.stop() }
    public func waitUntilFinished(timeoutNanoseconds: Int64) -> Bool {
        stream.waitUntilFinished(timeoutNanoseconds: timeoutNanoseconds)
    }
    public var error: CaptureError? { stream.error }

    /// Holds the capture thread for `milliseconds` (tests: a starved CPU; see `PipeWireStream.holdThread`).
    func holdThread(milliseconds: Int) { stream.holdThread(milliseconds: milliseconds) }

    /// The negotiated format, e.g. "audio F32 2 ch 48000 Hz" (empty before negotiation).
    public var negotiatedFormat: String { stream.format.withLock { $0 } }
}
