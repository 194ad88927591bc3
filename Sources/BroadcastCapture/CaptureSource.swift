import BroadcastKit

/// Something that produces sample buffers on its own threads and hands them to a sink:
/// the synthetic test source, a Y4M/PCM file or pipe, or PipeWire capture.
///
/// Sources call `sink.process(_:type:)` from their own threads (one per lane). The buffers
/// they pass are borrowed: valid only for the duration of that call.
public protocol CaptureSource: AnyObject, Sendable {
    /// A short human-readable name, e.g. "test 1280x720@30" or "y4m:-".
    var description: String { get }

    /// Starts the lane threads. Throws if the source cannot start (bad input, device missing, ...).
    func start(into sink: SampleBufferSink) throws(CaptureError)

    /// Asks every lane to stop and joins its threads. Idempotent; safe after EOF.
    func stop()

    /// Waits up to `timeoutNanoseconds` (negative = forever) for the source to end by itself.
    /// Returns true when it ended (EOF, duration reached or error), false on timeout.
    func waitUntilFinished(timeoutNanoseconds: Int64) -> Bool

    /// Set when the source ended because of an error (e.g. a truncated Y4M frame).
    var error: CaptureError? { get }

    /// Upper bound of capture-buffer memory this source keeps resident, known before start,
    /// for the memory plan.
    var plannedResidentBytes: Int { get }
}

extension CaptureSource {
    /// Sources that hold no sizeable buffers of their own plan nothing.
    public var plannedResidentBytes: Int { 0 }
}

/// Why a capture source failed; one line, meant for the user.
public struct CaptureError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Broad class of failure, so a CLI can map it to an exit code.
    public enum Kind: String, Sendable {
        /// The input is malformed or unsupported (bad header, colour space, truncated data).
        case badInput
        /// A device, service or file is missing or cannot be reached.
        case unavailable
        /// Permission refused (portal dialog declined, file not readable).
        case denied
        /// A read/write or system call failed.
        case io
    }

    public var kind: Kind
    /// A one-line message without trailing newline.
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
