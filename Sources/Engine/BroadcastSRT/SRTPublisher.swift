import CSRTShim
import Glibc
import Synchronization
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// A `PacketSink` that sends the stream as MPEG-TS over SRT (caller mode, live transmission type)
/// to a listening receiver: FFmpeg's `srt://…?mode=listener`, `srt-live-transmit`, MediaMTX, an
/// ingest.
///
/// `open` loads libsrt on first use (`CSRTShim`; a process without an srt:// destination never
/// maps it) and connects with every buffer set explicitly (`SRTBuffers`, a line of the memory
/// plan). `write` muxes each packet (`TSMuxer`) straight into 1316-byte payloads and sends them;
/// SRT's ARQ retransmits what the link loses within the latency window, and drops what is too late
/// on the sender. The link's state (`srt_bstats`: unacknowledged send buffer, loss, RTT, bandwidth
/// estimate) is read for the stats and for congestion: data sitting unacknowledged for longer
/// than half the latency is reported as backlog, which the bitrate controller follows.
///
/// Refusals (a listener that answers and rejects the passphrase or stream id) are
/// `publishRejected` (exit 3, never retried); no answer is `connectFailed`; a send that fails
/// after the connection is `writeFailed` (reconnect with backoff, as for RTMP).
package final class SRTPublisher: PacketSink, LinkFeedback, TSChunkOutput, @unchecked Sendable {
    package let displayName: String
    package var kind: TagSinkKind { .srt }
    package var capabilities: DestinationCapabilities {
        DestinationCapabilities(isNetworkPublisher: true, needsRealTimeInput: true)
    }
    /// libsrt's send and receive buffers, its fixed cost and library pages, and the TS muxer.
    package var memoryPlanLines: [MemoryPlan.Line] {
        [MemoryPlan.Line(key: "srt_buffers", label: "SRT buffers (libsrt + TS muxer)", bytes: buffers.plannedBytes)]
    }
    private let url: SRTURL
    private let streamID: String?
    private let buffers: SRTBuffers
    private let connectTimeoutSeconds: Int
    private let muxer: TSMuxer
    /// The open socket, or -1; read by `abortPendingIO` and the stats from other threads.
    private let socket = Atomic<Int32>(-1)
    private let error: UnsafeMutablePointer<CChar>
    private static let errorCapacity = 256
    /// The last link statistics read (by the housekeeper once a second, or a stats call).
    private let link = Locked<TransportLinkStats?>(nil)

    /// `streamKey` fills the stream id when the URL has none (an empty key: no stream id).
    /// `passphrase` (from `--srt-passphrase-file`) wins over one in the URL.
    package init(url text: String, streamKey: String, passphrase: String?, hasVideo: Bool, audio: AudioEncoderSettings?,
                 maxBitrateKbps: Int, connectTimeoutSeconds: Int, linkStallNs: Int64? = nil) {
        // Checked before assembly (`PipelineAssembler.validateNetworkDestinations`); an unparsable
        // URL here connects nowhere and says so at open.
        let url = (try? SRTURL(parsing: text)) ?? SRTURL(invalid: ())
        self.url = url
        streamID = url.streamID ?? (streamKey.isEmpty ? nil : streamKey)
        var u = url
        if let passphrase { u.passphrase = passphrase }
        self.urlWithSecret = u
        displayName = url.redacted
        buffers = SRTBuffers(latencyMs: url.latencyMs, maxBitrateKbps: maxBitrateKbps)
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.linkStallNs = linkStallNs
        muxer = TSMuxer(layout: TSStreamLayout(hasVideo: hasVideo, audioCodec: audio?.codec, audioChannels: audio?.channels ?? 2))
        error = .allocate(capacity: Self.errorCapacity)
        error.initialize(repeating: 0, count: Self.errorCapacity)
    }

    private let urlWithSecret: SRTURL
    /// Block mode: sends wait for libsrt's buffer to drain under a window (`waitForWindow`), and
    /// a link that takes nothing for this long (`SRTBuffers.blockModeStallNs`) is stalled. nil:
    /// live SRT as usual (the stream goes out as it comes; libsrt drops what is too late).
    private let linkStallNs: Int64?
    /// Wakes the connect (the lookup and the handshake) at once: the process's stop by default.
    var stop: StopFlag? = .process

    deinit {
        close()
        error.deallocate()
    }

    package func open() throws(TransportError) {
        close()
        aborted.store(false, ordering: .releasing)
        guard url.port > 0 else { throw TransportError.connectFailed("invalid SRT URL") }
        muxer.reset()
        var refused: Int32 = 0
        var options = bk_srt_options()
        options.latency_ms = Int32(buffers.latencyMs)
        options.send_buffer_bytes = Int32(buffers.sendBufferBytes)
        options.receive_buffer_bytes = Int32(buffers.receiveBufferBytes)
        options.connect_timeout_ms = Int32(max(1, connectTimeoutSeconds) * 1000)
        options.send_timeout_ms = Int32(SRTBuffers.sendTimeoutMs)
        // One deadline for the lookup and the connect; both wake on the stop.
        let deadline = Deadline.after(seconds: max(1, connectTimeoutSeconds))
        let address: HostResolver.Address
        do {
            let all = try HostResolver.resolve(host: url.host, port: url.port, socketType: Int32(SOCK_DGRAM.rawValue),
                                               deadline: deadline, stop: stop)
            address = all[0]
        } catch {
            throw TransportError.connectFailed(
                "\(displayName): \(TCPSocket.resolveFailure(error, timeoutSeconds: max(1, connectTimeoutSeconds)))")
        }
        let stopFD = stop?.wakeFD ?? -1
        let s: Int32 = address.withSockaddr { sa, length in
            Self.withOptionalCString(streamID) { sid in
                Self.withOptionalCString(urlWithSecret.passphrase) { pass in
                    options.stream_id = sid
                    options.passphrase = pass
                    return bk_srt_connect(sa, Int32(length), &options, stopFD, deadline.ns, error, Self.errorCapacity, &refused)
                }
            }
        }
        guard s >= 0 else {
            let why = String(cString: error)
            if refused != 0 { throw TransportError.publishRejected("\(displayName): the SRT listener refused the connection: \(why)") }
            throw TransportError.connectFailed("\(displayName): \(why)")
        }
        socket.store(s, ordering: .releasing)
    }

    /// Muxes one packet into TS and sends the chunks it fills.
    package func write(_ packet: EncodedPacket) throws(TransportError) {
        guard socket.load(ordering: .acquiring) >= 0 else {
            throw TransportError.writeFailed("\(displayName): not connected")
        }
        try muxer.write(packet, to: self)
    }

    func sendChunk(_ chunk: UnsafeRawBufferPointer) throws(TransportError) {
        let s = socket.load(ordering: .acquiring)
        guard s >= 0 else { throw .writeFailed("\(displayName): connection closed") }
        if let stall = linkStallNs { try waitForWindow(s, stallNs: stall) }
        if bk_srt_send(s, chunk.baseAddress, Int32(chunk.count), error, Self.errorCapacity) < 0 {
            throw .writeFailed("\(displayName): \(String(cString: error))")
        }
    }

    /// Block mode: holds the next packet until libsrt's unacknowledged data is under
    /// `SRTBuffers.blockModeWindowBytes`. The data then waits in our send queue, where it holds
    /// the producer, and never long in libsrt's buffer, where the sender drops what outlives the
    /// latency; nor does it overfill a slow link's queue, so the link carries it without loss at
    /// its own pace, slower than the stream if it must. A buffer that does not shrink for the
    /// stall bound is a stalled link.
    private func waitForWindow(_ s: Int32, stallNs: Int64) throws(TransportError) {
        var least = Int64.max
        var since = MediaTime.now()
        while case let held = bk_srt_unacknowledged_bytes(s), held > buffers.blockModeWindowBytes,
              !aborted.load(ordering: .acquiring) {
            let now = MediaTime.now()
            if held < least {
                least = held
                since = now
            } else if now - since > stallNs {
                throw .writeFailed("\(displayName): the link took nothing for \((now - since) / 1_000_000_000) s "
                                   + "(the receiver acknowledged no packet)")
            }
            var t = timespec(tv_sec: 0, tv_nsec: 1_000_000)
            nanosleep(&t, nil)
        }
    }

    /// Waits (up to `SRTBuffers.drainTimeoutMs`; in block mode while it makes progress) for the
    /// receiver to acknowledge what was sent, then closes: in live mode libsrt would drop unacknowledged packets at once, and the last
    /// GOP's end with them.
    package func close() {
        let s = socket.load(ordering: .acquiring)
        guard s >= 0 else { return }
        if !aborted.load(ordering: .acquiring) {
            // Block mode waits while the buffer still shrinks (the link's pace), up to the stall bound.
            var raw = bk_srt_stats()
            var waitedMs = 0
            var least = Int64.max
            while waitedMs < (linkStallNs == nil ? SRTBuffers.drainTimeoutMs : Int(linkStallNs! / 1_000_000)),
                  bk_srt_stats_read(s, &raw) == 0, raw.send_buffer_bytes > 0, !aborted.load(ordering: .acquiring) {
                if linkStallNs != nil && raw.send_buffer_bytes < least {
                    least = raw.send_buffer_bytes
                    waitedMs = 0
                }
                var t = timespec(tv_sec: 0, tv_nsec: 10_000_000)
                nanosleep(&t, nil)
                waitedMs += 10
            }
        }
        if socket.compareExchange(expected: s, desired: -1, ordering: .acquiringAndReleasing).exchanged { bk_srt_close(s) }
    }

    /// Closing the socket wakes a send blocked on a full buffer: it fails at once.
    package func abortPendingIO() {
        aborted.store(true, ordering: .releasing)
        let s = socket.exchange(-1, ordering: .acquiringAndReleasing)
        if s >= 0 { bk_srt_close(s) }
    }
    private let aborted = Atomic<Bool>(false)

    /// Reads `srt_bstats` (any thread) and keeps it for the stats.
    package var linkStats: TransportLinkStats? {
        let s = socket.load(ordering: .acquiring)
        guard s >= 0 else { return link.withLock { $0 } }
        var raw = bk_srt_stats()
        guard bk_srt_stats_read(s, &raw) == 0 else { return link.withLock { $0 } }
        let now = TransportLinkStats(rttMs: raw.rtt_ms, bandwidthMbps: raw.bandwidth_mbps, sendRateMbps: raw.send_rate_mbps,
                                     packetsSent: Int(raw.packets_sent), packetsLost: Int(raw.packets_lost),
                                     packetsRetransmitted: Int(raw.packets_retransmitted),
                                     packetsDropped: Int(raw.packets_dropped), sendBufferMs: Int(raw.send_buffer_ms))
        link.withLock { $0 = now }
        return now
    }

    /// Bytes in libsrt's send buffer (not yet acknowledged), plus all it dropped as too late,
    /// plus the share of each interval's new data that the link did not carry: live-mode SRT has
    /// no congestion control, so an over-driven link shows as retransmissions (the receiver's
    /// loss reports repeat and over-count), and the wire's retransmitted fraction is the part of
    /// the capacity that went to repairs, not to the data handed over.
    package var undeliveredBytes: Int {
        let s = socket.load(ordering: .acquiring)
        guard s >= 0 else { return 0 }
        var raw = bk_srt_stats()
        guard bk_srt_stats_read(s, &raw) == 0 else { return 0 }
        let unrepaired = repairs.withLock { r -> Int64 in
            if raw.bytes_sent < r.wire || raw.bytes_sent_unique < r.unique { r = RepairShare() }  // a new connection
            let unique = raw.bytes_sent_unique - r.unique, wire = raw.bytes_sent - r.wire
            let retransmitted = raw.bytes_retransmitted - r.retransmitted
            if wire > 0 && retransmitted > 0 {
                r.undelivered += Int64(Double(unique) * Double(min(retransmitted, wire)) / Double(wire))
            }
            r.unique = raw.bytes_sent_unique
            r.wire = raw.bytes_sent
            r.retransmitted = raw.bytes_retransmitted
            return r.undelivered
        }
        return Int(max(0, raw.send_buffer_bytes) + max(0, raw.bytes_dropped) + unrepaired)
    }
    private struct RepairShare { var unique: Int64 = 0, wire: Int64 = 0, retransmitted: Int64 = 0, undelivered: Int64 = 0 }
    private let repairs = Locked(RepairShare())

    /// Time data waits unacknowledged beyond a round trip, scaled so that half the latency reads
    /// as the bitrate controller's congestion threshold: SRT drops what waits a whole latency.
    package var transportBacklogMs: Int {
        guard let l = linkStats else { return 0 }
        let waiting = max(0, l.sendBufferMs - Int(l.rttMs) - 20)
        return waiting * 600 / max(1, buffers.latencyMs)
    }

    /// Access units the muxer could not lay out (counted, not sent).
    var droppedUnits: Int { muxer.droppedUnits }

    private static func withOptionalCString<R>(_ s: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
        guard let s else { return body(nil) }
        return s.withCString { body($0) }
    }
}
