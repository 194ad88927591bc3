import BroadcastKit

/// Captures a PipeWire Video/Source node (a compositor screen-cast stream, a camera, or
/// pw-test-screen) on its own thread. Accepts BGRx, BGRA, RGBx, RGBA, NV12 and I420 in
/// mappable (SHM/MemFd) buffers. A size change mid-stream is passed through as frames of the
/// new size; the session rescales to its fixed output size.
public final class PipeWireScreenSource: CaptureSource {
    let stream: PipeWireStream
    private let label: String

    /// - Parameters:
    ///   - nodeName: the node's `node.name` (linked through target.object), or nil with `nodeID`.
    ///   - nodeID: a node id, as the portal hands out; `UInt32.max` when unused.
    ///   - remoteFD: an fd from the portal's OpenPipeWireRemote, or -1 for the default daemon.
    ///   - bufferCount: buffers preferred (2); a producer may insist on more.
    ///   - videoSize: the output size, asked of a producer that can scale; nil asks for 1280x720.
    public init(nodeName: String?, nodeID: UInt32 = UInt32.max, remoteFD: Int32 = -1, bufferCount: Int = 2,
                videoSize: (width: Int, height: Int)? = nil, durationSeconds: Double? = nil) {
        stream = PipeWireStream(kind: .video, target: nodeName, targetID: nodeID, remoteFD: remoteFD,
                                streamName: "broadcast-screen", buffers: bufferCount, videoSize: videoSize,
                                durationSeconds: durationSeconds)
        label = "pipewire screen " + (nodeName ?? "node \(nodeID)")
    }

    public var description: String { label }

    /// What capture keeps resident in this process, for the memory plan: a constant, whatever the
    /// desktop size or the number of buffers the producer insists on. Buffers are mapped (no
    /// RSS) and each frame is read in stripes whose pages are released behind the reader
    /// (`FrameConverter.maxSourceResidentBytes`, about 0.6 MB), plus the buffers' metadata pages,
    /// plus the stream's PipeWire client (`PipeWireStream.clientResidentBytes`).
    public var plannedResidentBytes: Int { Self.plannedResidentBytes }
    static let plannedResidentBytes = FrameConverter.maxSourceResidentBytes + (64 << 10) + PipeWireStream.clientResidentBytes
    public func start(into sink: SampleBufferSink) throws(CaptureError) { try stream.start(into: sink) }
    public func stop() { stream.stop() }
    public func waitUntilFinished(timeoutNanoseconds: Int64) -> Bool {
        stream.waitUntilFinished(timeoutNanoseconds: timeoutNanoseconds)
    }
    public var error: CaptureError? { stream.error }

    /// Frames handed to the sink so far.
    public var framesDelivered: Int { stream.delivered.load(ordering: .relaxed) }
    /// The negotiated format, e.g. "video BGRx 1280x720" (empty before negotiation).
    public var negotiatedFormat: String { stream.format.withLock { $0 } }
}
