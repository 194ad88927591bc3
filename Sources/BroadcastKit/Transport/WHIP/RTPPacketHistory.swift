/// The last `capacity` video RTP packets as sent (before SRTP), in one preallocated block, so a
/// NACK (RFC 4585 generic NACK) can be answered by sending the same packet again. A packet older
/// than the ring is gone: the NACK is counted as unanswerable. Its bytes are a memory-plan line.
package final class RTPPacketHistory {
    package static let capacity = 512
    package static let slotBytes = 1232
    package static var plannedBytes: Int { capacity * (slotBytes + 8) }

    private let storage: UnsafeMutableRawBufferPointer
    private var lengths: [Int]
    private var sequences: [UInt16]

    package init() {
        storage = .allocate(byteCount: Self.capacity * Self.slotBytes, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        lengths = [Int](repeating: 0, count: Self.capacity)
        sequences = [UInt16](repeating: 0, count: Self.capacity)
    }

    deinit { storage.deallocate() }

    package func reset() {
        for i in 0..<Self.capacity { lengths[i] = 0 }
    }

    package func store(sequence: UInt16, _ packet: UnsafeRawBufferPointer) {
        guard packet.count <= Self.slotBytes else { return }
        let i = Int(sequence) % Self.capacity
        UnsafeMutableRawBufferPointer(rebasing: storage[(i * Self.slotBytes)..<(i * Self.slotBytes + packet.count)])
            .copyMemory(from: packet)
        lengths[i] = packet.count
        sequences[i] = sequence
    }

    /// Copies packet `sequence` into `out`; its length, or nil when it is no longer held.
    package func copy(sequence: UInt16, into out: UnsafeMutableRawBufferPointer) -> Int? {
        let i = Int(sequence) % Self.capacity
        let n = lengths[i]
        guard n > 0, sequences[i] == sequence, n <= out.count else { return nil }
        out.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[(i * Self.slotBytes)..<(i * Self.slotBytes + n)]))
        return n
    }
}
