import Synchronization

/// One output of the session: a bounded `SendQueue` drained by its own sender thread into a `TagSink`.
///
/// The sender is the only thread that touches the sink, so a slow network can only fill this
/// destination's queue (where the congestion policy applies); it never blocks a lane.
public final class Destination: @unchecked Sendable {
    public enum State: Int, Sendable { case idle = 0, live, failed, closed }

    public let sink: TagSink
    public let queue: SendQueue
    /// The destination whose delivery is reported as "sent" in the stats (RTMP when present).
    public let isPrimary: Bool
    private let stats: BroadcastStats
    private let thread: WorkerThread
    private let stopping = Atomic<Bool>(false)
    private let stateValue = Atomic<Int>(State.idle.rawValue)
    private let failure = Mutex<TransportError?>(nil)
    private let sentBytes = Atomic<Int>(0)

    public init(sink: TagSink, policy: CongestionPolicy, isPrimary: Bool, stats: BroadcastStats) {
        self.sink = sink
        self.isPrimary = isPrimary
        self.stats = stats
        queue = SendQueue(policy: policy, stats: stats)
        thread = WorkerThread(name: isPrimary ? "bk-send" : "bk-record")
    }

    public var state: State { State(rawValue: stateValue.load(ordering: .acquiring)) ?? .failed }
    /// The error that stopped this destination, if any.
    public var error: TransportError? { failure.withLock { $0 } }
    /// Body bytes the sink accepted.
    public var bytesSent: Int { sentBytes.load(ordering: .relaxed) }

    /// Opens the sink on the caller's thread (so start-up errors reach `start()`), then starts the sender.
    public func open() throws(TransportError) {
        do {
            try sink.open()
        } catch let e as TransportError {
            throw e
        } catch {
            throw TransportError.connectFailed("\(sink.displayName): \(error)")
        }
        stateValue.store(State.live.rawValue, ordering: .releasing)
        thread.start { [self] in run() }
    }

    private func run() {
        while true {
            let got = queue.withNext(deadlineNs: MediaTime.now() + 200_000_000) { tag in
                guard state == .live else { return }
                do {
                    try sink.write(tag)
                    sentBytes.add(tag.body.count, ordering: .relaxed)
                    if isPrimary { account(tag) }
                } catch {
                    let te = (error as? TransportError) ?? .writeFailed("\(error)")
                    failure.withLock { $0 = te }
                    stateValue.store(State.failed.rawValue, ordering: .releasing)
                }
            }
            if !got && stopping.load(ordering: .acquiring) { break }
        }
    }

    private func account(_ tag: FLVTag) {
        stats.update { s in
            s.bytesSent += tag.body.count
            switch tag.type {
            case .video:
                s.videoBytesSent += tag.body.count
                if !tag.isHeader { s.videoFramesSent += 1 }
            case .audio:
                s.audioBytesSent += tag.body.count
                if !tag.isHeader { s.audioFramesSent += 1 }
            case .scriptData:
                break
            }
        }
    }

    /// Lets the sender drain what is queued until `deadlineNs`, then closes the sink.
    public func finish(deadlineNs: Int64) {
        _ = queue.waitUntilDrained(deadlineNs: deadlineNs)
        stopping.store(true, ordering: .releasing)
        queue.close()
        if state == .live || state == .failed {
            // Anything still queued past the deadline is abandoned so close stays bounded.
            queue.removeAll()
        }
        thread.join()
        sink.close()
        stateValue.store(State.closed.rawValue, ordering: .releasing)
    }
}
