import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// What the endpoint received of our media, measured over the span each receiver report covers.
///
/// A receiver report says how far the video's sequence numbers got (highest received) and how many
/// packets were lost in all. Between two reports, the packets in that sequence range were sent at
/// known times with known sizes (this ring, written as each video packet leaves), so what arrived
/// of them, over the time it took to send them, is the rate the path carried then: a measurement
/// of the past, but never the past's loss fraction applied to the present's rate. The loss
/// fraction alone, counted against each second's bytes, lags the rate it describes by a report
/// interval (0.5-1.5 s from aiortc): after a cut, the old fraction times the new rate read as a
/// link far slower than it is, and the cuts compounded to the floor (312 kbps through a
/// 1200 kbit/s link in CI).
///
/// Audio shares the path: its bytes over the same span count at the same delivered share, so the
/// rate covers all media, as the bitrate controller's counts do.
///
/// Owned by the sender thread (it writes the ring and takes each new report); the result is
/// published through `WHIPReceiverReports`. A fixed ring allocated once: a memory-plan line.
package final class RTPDeliveryMeter {
    /// Video packets remembered: 2048 at 700 packets a second (1080p at 8 Mbit/s) is 2.9 s,
    /// past the longest report interval of aiortc (1.5 s) and browsers (about 1 s).
    static let capacity = 2048
    static var plannedBytes: Int { capacity * MemoryLayout<Entry>.stride }
    /// A span shorter than this measures a burst, not a rate.
    static let shortestSpanNs: Int64 = 200_000_000

    struct Entry {
        var sequence: UInt16 = 0
        var valid = false
        /// Video and audio payload bytes sent up to and including this packet.
        var videoBytes = 0
        var audioBytes = 0
        var sentNs: Int64 = 0
    }

    private let ring: UnsafeMutablePointer<Entry>
    private var videoBytes = 0
    private var audioBytes = 0
    /// The previous report's highest sequence and cumulative loss (nil: none yet on this session).
    private var previous: (highest: UInt16, lost: Int)?

    package init() {
        ring = .allocate(capacity: Self.capacity)
        ring.initialize(repeating: Entry(), count: Self.capacity)
    }

    deinit {
        ring.deinitialize(count: Self.capacity)
        ring.deallocate()
    }

    /// A new session: sequence numbers and loss counts start over.
    func reset() {
        for i in 0..<Self.capacity { ring[i].valid = false }
        previous = nil
    }

    /// An audio packet's payload left (first transmissions only).
    func audioSent(bytes: Int) { audioBytes &+= bytes }

    /// Video packet `sequence` left at `nowNs` with `bytes` of payload (first transmissions only).
    package func videoSent(sequence: UInt16, bytes: Int, nowNs: Int64) {
        videoBytes &+= bytes
        ring[Int(sequence) % Self.capacity] = Entry(sequence: sequence, valid: true, videoBytes: videoBytes,
                                                    audioBytes: audioBytes, sentNs: nowNs)
    }

    /// A receiver report about our video: the highest sequence number received (its low 16 bits)
    /// and the cumulative number of packets lost. Returns the rate the path carried (kbit/s,
    /// audio included) over the span since the previous report, or nil when it cannot be
    /// measured (the first report, a span too short or older than the ring, a report going
    /// backwards).
    package func take(highest: UInt16, cumulativeLost: Int) -> Int? {
        guard let p = previous else {
            previous = (highest, cumulativeLost)
            return nil
        }
        let expected = Int(highest &- p.highest)
        // A report older than the previous one (reordered on the path) says nothing new.
        guard expected < 0x8000 else { return nil }
        previous = (highest, cumulativeLost)
        guard expected > 0, expected < Self.capacity else { return nil }
        let a = ring[Int(p.highest) % Self.capacity], b = ring[Int(highest) % Self.capacity]
        guard a.valid, b.valid, a.sequence == p.highest, b.sequence == highest, b.sentNs - a.sentNs >= Self.shortestSpanNs
        else { return nil }
        // Repairs (and their duplicates) count as received: they crossed the path too. Never more
        // than was sent: a report cannot raise the rate past what left.
        let received = min(expected, max(0, expected - (cumulativeLost - p.lost)))
        let bytes = (b.videoBytes - a.videoBytes) + (b.audioBytes - a.audioBytes)
        guard bytes > 0 else { return nil }
        let deliveredBits = Double(bytes) * Double(received) / Double(expected) * 8
        return Int(deliveredBits / (Double(b.sentNs - a.sentNs) / 1e9) / 1000)
    }
}
