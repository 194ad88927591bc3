import BroadcastCore

/// The video encoder's output stage: stages each H.264 packet in the interleaver, carrying the
/// capture time of its source frame for the capture-to-socket latency.
package struct VideoPacketWriter: @unchecked Sendable {
    private let interleaver: Interleaver

    package init(interleaver: Interleaver) { self.interleaver = interleaver }

    package func submit(_ p: EncodedPacket, captureNs: Int64) {
        var packet = p
        packet.captureNs = captureNs
        interleaver.submit(packet, nowNs: MediaTime.now())
    }
}
