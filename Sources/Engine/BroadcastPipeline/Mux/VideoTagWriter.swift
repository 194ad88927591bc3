import BroadcastCore

/// The video encoder's output stage: stages each H.264 packet as an FLV AVC tag, carrying the
/// capture time of its source frame for the capture-to-socket latency.
package struct VideoTagWriter: @unchecked Sendable {
    private let interleaver: Interleaver

    package init(interleaver: Interleaver) { self.interleaver = interleaver }

    package func submit(_ p: EncodedPacket, captureNs: Int64) {
        interleaver.submit(type: .video, timestampMs: p.timestampMs, isKeyframe: p.isKeyframe,
                           bodySize: FLVTagBody.avcBodySize(payloadCount: p.data.count), nowNs: MediaTime.now(),
                           captureNs: captureNs) { dst in
            _ = FLVTagBody.writeAVCFrame(p.data, compositionOffsetMs: p.compositionOffsetMs,
                                         isKeyframe: p.isKeyframe, into: dst)
        }
    }
}
