import BroadcastCore

/// What a memory budget counts.
///
/// A process that embeds the engine (a Python tool with numpy and PyAV loaded, a GStreamer
/// application, an editor) already holds tens of MB before the session exists; the session can
/// promise only what it adds. The CLI is the whole process, so it budgets all of it.
public enum MemoryBudgetScope: Int, Sendable, Equatable, CaseIterable {
    /// The session's own memory: its pools, encoders, queues and rings, the code and libraries it
    /// faults in and the threads it starts, measured as growth from the moment it is prepared. The
    /// host's resident memory at that moment is shown in the plan, not charged. The embedders'
    /// default (C ABI, Python, GStreamer: `BK_BUDGET_SESSION`).
    case session = 0
    /// The whole process's resident memory: the runtime baseline (RSS when the session is
    /// prepared) is charged too. The CLI's default (`BK_BUDGET_PROCESS`).
    case process = 1

    /// The plan's word for it.
    public var name: String { self == .session ? "session" : "process" }

    /// What the scope counts, for the plan's `budget scope` row.
    public var meaning: String {
        switch self {
        case .session: return "the session's own memory, measured as growth from prepare"
        case .process: return "the whole process's resident memory (runtime baseline charged)"
        }
    }
}
