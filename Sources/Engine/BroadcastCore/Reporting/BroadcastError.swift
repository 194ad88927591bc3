/// Errors from starting or running a session. Each maps to a documented CLI exit code.
public enum BroadcastError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Bad configuration (exit 2).
    case configuration(String)
    /// The memory plan does not fit the budget (exit 2).
    case memoryBudget(String)
    /// Could not connect or publish (exit 3).
    case connect(String)
    /// Failed while streaming (exit 4).
    case streaming(String)

    public var description: String {
        switch self {
        case .configuration(let s), .memoryBudget(let s), .connect(let s), .streaming(let s): return s
        }
    }

    /// The CLI exit code for this error.
    public var exitCode: Int32 {
        switch self {
        case .configuration, .memoryBudget: return 2
        case .connect: return 3
        case .streaming: return 4
        }
    }
}
