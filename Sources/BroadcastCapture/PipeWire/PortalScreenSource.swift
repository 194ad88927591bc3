import BroadcastKit
import Glibc

/// The screen granted by the ScreenCast portal: a `PipeWireScreenSource` on the portal's node
/// through the portal's PipeWire remote fd, plus the portal session that keeps the grant alive
/// (the compositor revokes the stream when the session's bus connection closes).
public final class PortalScreenSource: CaptureSource {
    private let screen: PipeWireScreenSource
    /// The portal session and whether the fd still belongs to us (not yet handed to PipeWire).
    private let state: Locked<(portal: ScreenCastPortal?, unusedFD: Int32)>
    /// The node id the portal granted.
    public let nodeID: UInt32
    /// Whether a stored restore token was sent, so the portal could skip its dialog.
    public let sentRestoreToken: Bool
    /// The cursor mode requested from the portal: 2 embedded, 1 hidden, 0 none offered.
    public let cursorMode: UInt32

    init(portal: sending ScreenCastPortal, grant: ScreenCastPortal.Grant, bufferCount: Int,
         videoSize: (width: Int, height: Int)? = nil, durationSeconds: Double?) {
        screen = PipeWireScreenSource(nodeName: nil, nodeID: grant.nodeID, remoteFD: grant.remoteFD,
                                      bufferCount: bufferCount, videoSize: videoSize, durationSeconds: durationSeconds)
        nodeID = grant.nodeID
        sentRestoreToken = grant.sentRestoreToken
        cursorMode = grant.cursorMode
        state = Locked((portal: portal, unusedFD: grant.remoteFD))
    }

    deinit {
        state.withLock { s in
            if s.unusedFD >= 0 { close(s.unusedFD) }
            s.portal?.close()
            s.portal = nil
        }
    }

    public var description: String { "portal screen (node \(nodeID))" }

    /// What capture keeps resident in this process, for the memory plan (see
    /// `PipeWireScreenSource.plannedResidentBytes`): a constant.
    public var plannedResidentBytes: Int { screen.plannedResidentBytes }

    public func start(into sink: SampleBufferSink) throws(CaptureError) {
        // pw_context_connect_fd takes the fd, even when the connection then fails.
        let fresh = state.withLock { s -> Bool in
            let had = s.unusedFD >= 0
            s.unusedFD = -1
            return had
        }
        guard fresh else { throw CaptureError(.unavailable, "the portal's PipeWire fd was already used; start a new session") }
        try screen.start(into: sink)
    }

    /// Stops capture and closes the portal session.
    public func stop() {
        screen.stop()
        state.withLock { s in
            s.portal?.close()
            s.portal = nil
        }
    }

    public func waitUntilFinished(timeoutNanoseconds: Int64) -> Bool {
        screen.waitUntilFinished(timeoutNanoseconds: timeoutNanoseconds)
    }

    public var error: CaptureError? { screen.error }

    /// Frames handed to the sink so far.
    public var framesDelivered: Int { screen.framesDelivered }
    /// The negotiated format, e.g. "video BGRx 1280x720" (empty before negotiation).
    public var negotiatedFormat: String { screen.negotiatedFormat }
}
