import BroadcastCore

/// Which FLV track a packet or tag belongs to.
enum TrackKind: Sendable {
    case video, audio
}

/// One encoded access unit, borrowed from the encoder until its next call.
///
/// H.264 data is AVCC (4-byte length-prefixed NAL units, no start codes, no SPS/PPS);
/// AAC data is one raw access unit (no ADTS); Opus data is one Opus packet.
package struct EncodedPacket: @unchecked Sendable {
    var kind: TrackKind
    package var data: UnsafeRawBufferPointer
    /// Decode time on the session timeline, in milliseconds.
    var timestampMs: Int64
    /// Presentation minus decode time (0 without B-frames).
    var compositionOffsetMs: Int32
    var isKeyframe: Bool

    init(kind: TrackKind, data: UnsafeRawBufferPointer, timestampMs: Int64,
                compositionOffsetMs: Int32 = 0, isKeyframe: Bool) {
        self.kind = kind
        self.data = data
        self.timestampMs = timestampMs
        self.compositionOffsetMs = compositionOffsetMs
        self.isKeyframe = isKeyframe
    }
}
