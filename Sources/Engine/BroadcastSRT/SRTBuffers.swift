import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// The buffers an SRT connection is opened with, set explicitly because libsrt's defaults (8192
/// packets each way, about 12 MB each) would not fit the memory plan; and what they cost in it.
package struct SRTBuffers: Sendable, Equatable {
    var latencyMs: Int
    /// Unacknowledged data the sender keeps for retransmission: the latency window plus a second
    /// of margin at the encoder's maximum rate, with a quarter more for packet overhead.
    var sendBufferBytes: Int
    /// A caller that only sends still gets a receive buffer: libsrt's minimum (32 packets).
    var receiveBufferBytes: Int
    /// Block mode: the unacknowledged data a send waits to fall under: the latency at the
    /// encoder's maximum rate, at least four packets. libsrt drops a packet as too late only after
    /// the latency and a second more; and with SRT's guidance of a latency of 4 RTT or more, the
    /// window spans 4 RTT, enough to keep the link busy.
    var blockModeWindowBytes: Int

    /// A send that waits this long on a full buffer fails: the link is gone, reconnect.
    static let sendTimeoutMs = 2000
    /// How long a clean close waits for the receiver to acknowledge the last packets.
    static let drainTimeoutMs = 1000
    /// Block mode: how long libsrt's send buffer may stop shrinking (before a send, or at the
    /// close) before the link counts as stalled. The link sets the pace until then.
    package static let blockModeStallNs: Int64 = 10_000_000_000
    /// libsrt's per-connection fixed cost we measured besides the buffers (queues, unit pools, its
    /// three threads), and the resident pages of libsrt + libcrypto once loaded.
    static let fixedBytes = 3 << 20
    static let packetBytes = 1500
    static let minimumSendBytes = 256 << 10

    package init(latencyMs: Int, maxBitrateKbps: Int) {
        self.latencyMs = latencyMs
        let window = maxBitrateKbps * 125 * (latencyMs + 1000) / 1000
        sendBufferBytes = max(Self.minimumSendBytes, window * 5 / 4)
        receiveBufferBytes = 32 * Self.packetBytes
        blockModeWindowBytes = max(4 * 1316, maxBitrateKbps * 125 * latencyMs / 1000)
    }

    /// What one SRT destination adds to the plan.
    package var plannedBytes: Int { sendBufferBytes + receiveBufferBytes + Self.fixedBytes + TSMuxer.plannedBytes }
}
