import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// H.264 over RTP (RFC 6184), non-interleaved mode: a NAL unit that fits is one packet (single NAL
/// unit mode); a larger one is split into FU-A fragments. The marker bit is set on the last packet
/// of an access unit.
enum H264RTPPacketizer {
    /// One packet's payload: up to two header bytes (the FU indicator and header) then a slice of the NAL.
    struct Fragment {
        var header: (UInt8, UInt8)
        var headerCount: Int
        var payload: UnsafeRawBufferPointer
        var marker: Bool
    }

    /// Emits the packets of one NAL unit (`nal` starts with its header byte).
    static func packetize(_ nal: UnsafeRawBufferPointer, maxPayload: Int, lastOfAccessUnit: Bool,
                                  _ emit: (Fragment) -> Void) {
        guard !nal.isEmpty else { return }
        if nal.count <= maxPayload {
            emit(Fragment(header: (0, 0), headerCount: 0, payload: nal, marker: lastOfAccessUnit))
            return
        }
        let indicator = (nal[0] & 0xE0) | 28
        let type = nal[0] & 0x1F
        var at = 1
        let chunk = maxPayload - 2
        while at < nal.count {
            let end = min(nal.count, at + chunk)
            var header = type
            if at == 1 { header |= 0x80 }
            if end == nal.count { header |= 0x40 }
            emit(Fragment(header: (indicator, header), headerCount: 2,
                          payload: UnsafeRawBufferPointer(rebasing: nal[at..<end]), marker: lastOfAccessUnit && end == nal.count))
            at = end
        }
    }

    /// Calls `body` for each NAL unit of an AVCC access unit (4-byte big-endian lengths); stops at a
    /// length that runs past the end (counted by the caller as a malformed unit).
    @discardableResult
    static func forEachNAL(_ avcc: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer, Bool) -> Void) -> Bool {
        var at = 0
        while at + 4 <= avcc.count {
            let n = Int(avcc.loadBE32(at))
            guard n > 0, at + 4 + n <= avcc.count else { return false }
            let nal = UnsafeRawBufferPointer(rebasing: avcc[(at + 4)..<(at + 4 + n)])
            at += 4 + n
            body(nal, at + 4 > avcc.count)
        }
        return at == avcc.count
    }
}
