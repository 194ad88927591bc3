import BroadcastCore

/// Transport failures, each mapped to a CLI exit code.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// TCP connect or RTMP handshake failed (exit 3 at start, reconnect while streaming).
    case connectFailed(String)
    /// The server refused the stream key or app (exit 3, never retried).
    case publishRejected(String)
    /// TLS verification failed (exit 3).
    case tlsRejected(String)
    /// The server still holds a publisher for this stream name (`NetStream.Publish.BadName`). At
    /// start it fails the start (exit 3); after a lost connection it is our own old session, which
    /// the server drops when it times out, so reconnecting retries it instead of giving up.
    case streamNameInUse(String)
    /// A write failed after publishing started.
    case writeFailed(String)
    /// The connection failed after publishing started: the server closed it, ended the stream,
    /// or broke the protocol (reconnect while streaming, exit 4).
    case connectionLost(String)
    /// A file could not be opened or written.
    case fileError(String)

    /// The server (or its certificate) said no: retrying would only repeat it.
    public var isRefusal: Bool {
        switch self {
        case .publishRejected, .tlsRejected: return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .connectFailed(let s): return "could not connect: \(s)"
        case .publishRejected(let s): return "stream key or app rejected by server: \(s)"
        case .tlsRejected(let s): return "TLS verification failed: \(s)"
        case .streamNameInUse(let s): return "the server is still publishing this stream name (an old session?): \(s)"
        case .writeFailed(let s): return "write failed: \(s)"
        case .connectionLost(let s): return "connection lost: \(s)"
        case .fileError(let s): return "file error: \(s)"
        }
    }
}
