import Glibc
import BroadcastCore

/// What the kernel knows about a TCP connection's path (`TCP_INFO`), read once a second by the
/// bitrate controller: the bytes the peer acknowledged, the smoothed and the lowest RTT, the
/// kernel's delivery-rate sample, and the receive window the peer last advertised.
///
/// Read with one `getsockopt` into a fixed buffer on the stack (no allocation). Offsets are those
/// of `struct tcp_info` in linux/tcp.h (stable ABI: fields are only ever appended); a kernel whose
/// answer is too short for a field gives nil.
package struct TCPLinkInfo: Sendable, Equatable {
    /// Bytes the peer acknowledged since the connection began (`tcpi_bytes_acked`).
    var bytesAcked: UInt64
    /// Smoothed RTT (`tcpi_rtt`), microseconds.
    var rttMicros: UInt32
    /// The lowest RTT seen (`tcpi_min_rtt`), microseconds: the path with empty queues.
    var minRttMicros: UInt32
    /// The kernel's latest delivery-rate sample, bytes per second (`tcpi_delivery_rate`).
    var deliveryRateBytesPerSecond: UInt64
    /// The sample was taken while the sender had too little to send to fill the path: it
    /// then shows what was sent, not what the path carries.
    var deliveryRateAppLimited: Bool
    /// The receive window the peer last advertised, bytes (`tcpi_snd_wnd`, Linux 6.2 and later;
    /// nil on older kernels): the free space of the peer's socket buffer. It shrinks while the
    /// peer's application reads slower than the data arrives, which no RTT shows.
    var sendWindowBytes: UInt32?

    init(bytesAcked: UInt64, rttMicros: UInt32, minRttMicros: UInt32,
                 deliveryRateBytesPerSecond: UInt64, deliveryRateAppLimited: Bool, sendWindowBytes: UInt32? = nil) {
        self.bytesAcked = bytesAcked
        self.rttMicros = rttMicros
        self.minRttMicros = minRttMicros
        self.deliveryRateBytesPerSecond = deliveryRateBytesPerSecond
        self.deliveryRateAppLimited = deliveryRateAppLimited
        self.sendWindowBytes = sendWindowBytes
    }

    /// The delivery-rate sample in kbit/s when it measured the path (nil: app-limited or none).
    var deliveryKbps: Int? {
        deliveryRateAppLimited || deliveryRateBytesPerSecond == 0
            ? nil : Int(min(deliveryRateBytesPerSecond, UInt64(Int32.max)) * 8 / 1000)
    }

    /// Milliseconds the path's queues add to its RTT now (smoothed RTT over the lowest).
    var queueingMs: Int { Int(rttMicros &- min(rttMicros, minRttMicros)) / 1000 }

    // Offsets in struct tcp_info (linux/tcp.h).
    private static let appLimitedByte = 7
    private static let rttOffset = 68
    private static let bytesAckedOffset = 120
    private static let minRttOffset = 148
    private static let deliveryRateOffset = 160
    private static let sendWindowOffset = 228
    /// Bytes up to and including `tcpi_delivery_rate`.
    private static let needed = deliveryRateOffset + 8

    /// Reads `fd`'s TCP_INFO; nil for a closed or non-TCP descriptor or an older kernel. Any
    /// thread: a descriptor closed meanwhile only gives an error.
    package static func read(_ fd: Int32) -> TCPLinkInfo? {
        guard fd >= 0 else { return nil }
        // 256 bytes: struct tcp_info is 232 on current kernels; the kernel copies at most this.
        var raw: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                  UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                  UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                  UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
            = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var len = socklen_t(MemoryLayout.size(ofValue: raw))
        let ok = withUnsafeMutableBytes(of: &raw) { buf in
            getsockopt(fd, Int32(IPPROTO_TCP), Int32(TCP_INFO), buf.baseAddress, &len) == 0
        }
        guard ok, Int(len) >= needed else { return nil }
        return withUnsafeBytes(of: &raw) { b in
            TCPLinkInfo(bytesAcked: b.loadUnaligned(fromByteOffset: bytesAckedOffset, as: UInt64.self),
                        rttMicros: b.loadUnaligned(fromByteOffset: rttOffset, as: UInt32.self),
                        minRttMicros: b.loadUnaligned(fromByteOffset: minRttOffset, as: UInt32.self),
                        deliveryRateBytesPerSecond: b.loadUnaligned(fromByteOffset: deliveryRateOffset, as: UInt64.self),
                        deliveryRateAppLimited: b[appLimitedByte] & 1 != 0,
                        sendWindowBytes: Int(len) >= sendWindowOffset + 4
                            ? b.loadUnaligned(fromByteOffset: sendWindowOffset, as: UInt32.self) : nil)
        }
    }
}
