/// Lifecycle events a session reports through `BroadcastSession.onEvent`. Texts never hold a key.
public enum BroadcastEvent: Sendable {
    case started([String])
    case warning(String)
    case reconnecting(attempt: Int, delaySeconds: Double)
    case reconnected(count: Int)
    case failed(String)
    case finished
}
