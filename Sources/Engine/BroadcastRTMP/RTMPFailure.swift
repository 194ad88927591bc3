import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// Where a publisher's connection stands; it decides what a failure there means.
enum RTMPStage: Sendable, Equatable {
    /// The RTMP handshake and Set Chunk Size (TCP connect and TLS report their own errors).
    case handshaking
    /// connect sent, its `_result` not yet read.
    case awaitingConnect
    /// releaseStream, FCPublish, createStream.
    case creatingStream
    /// publish sent, until the rejection grace after NetStream.Publish.Start has passed.
    case awaitingPublish
    /// Publishing: tags flow.
    case streaming

    var doing: String {
        switch self {
        case .handshaking: return "RTMP handshake"
        case .awaitingConnect: return "waiting for the connect reply"
        case .creatingStream: return "waiting for the createStream reply"
        case .awaitingPublish: return "waiting for the publish reply"
        case .streaming: return "streaming"
        }
    }
}

/// What went wrong on a publisher's connection, before it is given a meaning.
enum RTMPFailureCause: Sendable, Equatable {
    /// A receive (or an answer to the server, such as a pong) failed.
    case receive(TCPSocket.Failure)
    /// A send of our own message or tag failed.
    case send(TCPSocket.Failure)
    /// The server's bytes broke the chunk stream's rules or bounds.
    case protocolError(RTMPProtocolError)
    /// The server said no: `_error` or an error-level onStatus, with its status code if any.
    case refused(what: String, code: String?)
}

/// The one place a failure on an RTMP connection becomes a `TransportError` (and so an exit code).
///
/// A refusal (exit 3, never retried) is only what the server said or did in answer to us:
/// - `_error` or an error-level onStatus (`NetStream.Publish.BadName` is `streamNameInUse`:
///   our own stale session after a lost link, retried);
/// - the server closing the connection in answer to connect (nginx-rtmp: unknown app) or to
///   publish, up to the end of the rejection grace (nginx-rtmp's `deny publish` and `on_publish`
///   answering 4xx hang up there).
///
/// Everything else is a network fault (`connectFailed` while opening: retried after a lost link,
/// exit 3 at start), or `connectionLost`/`writeFailed` while streaming (reconnect, exit 4). A
/// failure after our own stop cut the connection (`stoppedByUs`) is never a refusal: the server
/// did not answer anything.
enum RTMPFailureClassifier {
    static func classify(_ cause: RTMPFailureCause, stage: RTMPStage, stoppedByUs: Bool, name: String,
                                 timeoutSeconds: Int) -> TransportError {
        if stoppedByUs || cause == .receive(.stopped) || cause == .send(.stopped) {
            let why = stage == .handshaking ? "the run stopped during the RTMP handshake" : "the run stopped while \(stage.doing)"
            return stage == .streaming ? .writeFailed("\(name): \(why)") : .connectFailed("\(name): \(why)")
        }
        switch cause {
        case .refused(let what, let code):
            let detail = code.map { " (\($0))" } ?? ""
            if stage == .streaming { return .connectionLost("\(name): server ended the stream\(detail)") }
            if code == "NetStream.Publish.BadName" { return .streamNameInUse("\(name): \(what)\(detail)") }
            return .publishRejected("\(name): \(what)\(detail)")
        case .protocolError(let error):
            let why = "\(name): protocol error from server: \(error)"
            return stage == .streaming ? .connectionLost(why) : .connectFailed(why)
        case .receive(let failure), .send(let failure):
            let sending: Bool
            if case .send = cause { sending = true } else { sending = false }
            if failure == .closed {
                switch stage {
                case .awaitingConnect:
                    return .publishRejected("\(name): server closed the connection in answer to connect (app refused?)")
                case .awaitingPublish:
                    return .publishRejected("\(name): server closed the connection in answer to publish")
                case .streaming:
                    return sending ? .writeFailed("\(name): send failed: connection closed by the server")
                                   : .connectionLost("\(name): server closed the connection")
                case .handshaking, .creatingStream:
                    return .connectFailed("\(name): server closed the connection while \(stage.doing)")
                }
            }
            let reason: String
            switch failure {
            case .timedOut:
                reason = stage == .streaming || sending
                    ? "no progress for the send/receive timeout (stalled link)"
                    : "no reply within \(timeoutSeconds) s"
            case .deadlinePassed:
                reason = "no reply within \(timeoutSeconds) s (one deadline for the whole connect, handshake and publish)"
            case .failed(let text): reason = text
            case .closed: reason = "connection closed"
            case .stopped: reason = "the run stopped"
            }
            if stage == .streaming {
                return sending ? .writeFailed("\(name): send failed: \(reason)") : .connectionLost("\(name): \(reason)")
            }
            return .connectFailed("\(name): \(stage.doing): \(reason)")
        }
    }
}
