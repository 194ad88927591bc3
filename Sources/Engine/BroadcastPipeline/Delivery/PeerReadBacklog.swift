import BroadcastCore

/// What a TCP peer holds acknowledged but unread, from the receive window it advertises: how far
/// the window is under the widest it advertised on this connection.
///
/// A relay or server that reads slower than the link behind socket buffers of seconds shows
/// nothing else until they are full: every byte is acknowledged at once and the RTT stays that
/// of an empty path. By then a probe has sent seconds over what the peer reads (a 1200 kbit/s
/// relay behind 1 MiB took 2500 kbps for 10 s, `tools/bitrate_shaped.py --slow-reader`). A peer
/// that keeps up reads within milliseconds, so its window stays within a few segments of the
/// widest (1-8 KB through nginx-rtmp, measured beside a 1200 kbit/s tbf).
struct PeerReadBacklog: Sendable {
    /// The widest window seen on the current connection, bytes.
    private(set) var widestWindow = 0
    private var lastAcked: UInt64 = 0
    private var lastSource = -1

    /// The bytes the peer holds unread now, from the followed destination's TCP_INFO (`source`
    /// names the destination). 0 when the kernel does not report the window. Another destination,
    /// or a new connection (the acknowledged count restarts), learns its widest window anew.
    mutating func unread(_ link: TCPLinkInfo?, source: Int) -> Int {
        guard let link, let window = link.sendWindowBytes.map(Int.init) else {
            widestWindow = 0
            lastSource = -1
            return 0
        }
        if source != lastSource || link.bytesAcked < lastAcked { widestWindow = 0 }
        lastSource = source
        lastAcked = link.bytesAcked
        widestWindow = max(widestWindow, window)
        return widestWindow - window
    }
}
