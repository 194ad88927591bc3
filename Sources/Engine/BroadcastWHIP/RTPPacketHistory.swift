import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// The last `capacity` video RTP packets as sent (before SRTP), in one preallocated block, so a
/// NACK (RFC 4585 generic NACK) can be answered by sending the same packet again. A packet older
/// than the ring is gone: the NACK is counted as unanswerable. Its bytes are a memory-plan line.
final class RTPPacketHistory {
    static let capacity = 512
    static let slotBytes = 1232
    static var plannedBytes: Int { capacity * (slotBytes + 16) }
    /// A packet is resent at most once in this long. Endpoints repeat their NACKs: aiortc lists
    /// every packet still missing at each new gap, so at 50% loss one lost packet was asked for
    /// dozens of times, each answer crowded the bottleneck, and the loss never ended (the relay
    /// dropped 19 567 of 23 919 datagrams in 20 s through a 1200 kbit/s link).
    static let resendGuardNs: Int64 = 100_000_000

    private let storage: UnsafeMutableRawBufferPointer
    private var lengths: [Int]
    private var sequences: [UInt16]
    /// When each slot's packet was last resent (CLOCK_MONOTONIC ns; 0: never).
    private var resentNs: [Int64]

    init() {
        storage = .allocate(byteCount: Self.capacity * Self.slotBytes, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        lengths = [Int](repeating: 0, count: Self.capacity)
        sequences = [UInt16](repeating: 0, count: Self.capacity)
        resentNs = [Int64](repeating: 0, count: Self.capacity)
    }

    deinit { storage.deallocate() }

    func reset() {
        for i in 0..<Self.capacity { lengths[i] = 0 }
    }

    func store(sequence: UInt16, _ packet: UnsafeRawBufferPointer) {
        guard packet.count <= Self.slotBytes else { return }
        let i = Int(sequence) % Self.capacity
        UnsafeMutableRawBufferPointer(rebasing: storage[(i * Self.slotBytes)..<(i * Self.slotBytes + packet.count)])
            .copyMemory(from: packet)
        lengths[i] = packet.count
        sequences[i] = sequence
        resentNs[i] = 0
    }

    /// Whether packet `sequence` may be resent at `nowNs` (held, and not resent within
    /// `resendGuardNs`); when it may, the resend is noted.
    func claimResend(sequence: UInt16, nowNs: Int64) -> Bool {
        let i = Int(sequence) % Self.capacity
        guard lengths[i] > 0, sequences[i] == sequence else { return true }  // `copy` counts it unanswerable
        guard resentNs[i] == 0 || nowNs - resentNs[i] >= Self.resendGuardNs else { return false }
        resentNs[i] = nowNs
        return true
    }

    /// Copies packet `sequence` into `out`; its length, or nil when it is no longer held.
    func copy(sequence: UInt16, into out: UnsafeMutableRawBufferPointer) -> Int? {
        let i = Int(sequence) % Self.capacity
        let n = lengths[i]
        guard n > 0, sequences[i] == sequence, n <= out.count else { return nil }
        out.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[(i * Self.slotBytes)..<(i * Self.slotBytes + n)]))
        return n
    }
}
