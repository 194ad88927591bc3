import Synchronization
import BroadcastCore
import BroadcastPipeline
import BroadcastFLV
import BroadcastNetwork

/// A `PacketSink` that publishes the stream to an RTMP/RTMPS server as FLV tags, speaking RTMP itself.
///
/// The publish half (the shape of HaishinKit's RTMPStream) over an `RTMPConnection` (socket,
/// handshake, chunk I/O, replies, the one failure classifier). `open` connects (TCP with a real
/// connect timeout; for `rtmps://` first a verified TLS session, see `TLSVerifier`), then
/// connect → releaseStream, FCPublish, createStream → publish(key, "live"), and watches the
/// connection for `rejectionGraceMilliseconds` (nginx-rtmp's access rules confirm a publish and
/// then hang up). `write` sends each tag body as one RTMP message (audio 8, video 9, data 18)
/// with its absolute timestamp in one call. About once a second it handles, without blocking
/// and within a byte budget, whatever the server sent. `close` sends FCUnpublish + deleteStream,
/// then closes.
///
/// What is a refusal and what is a network fault is decided in one place,
/// `RTMPFailureClassifier`. Messages carry `displayName` and never the key; the key's bytes are
/// zeroed from our buffers once sent.
///
/// `open`/`write`/`close` come from the destination's single sender thread; `bytesSent`,
/// `lastWriteMonotonicNs` and `abortPendingIO` may be used from any thread.
package final class RTMPPublisher: PacketSink, TCPPathFeedback, @unchecked Sendable {
    package var kind: TagSinkKind { .rtmp }
    /// The destination with the key replaced by "****".
    package let displayName: String
    package var capabilities: DestinationCapabilities { DestinationCapabilities(isNetworkPublisher: true) }
    /// What the server's bytes may make us hold: the chunk reader, bounded whatever a server sends.
    package var memoryPlanLines: [MemoryPlan.Line] {
        [MemoryPlan.Line(key: "rtmp_readers", label: "RTMP readers (server input caps)", bytes: RTMPChunkReader.plannedBytes)]
    }
    let connectTimeoutSeconds: Int
    /// Tag body bytes handed to the socket since `open`.
    var bytesSent: Int { sent.load(ordering: .relaxed) }
    /// Bytes handed to the socket that the server has not acknowledged yet: the backlog that
    /// sits in the kernel, invisible in the send queue (the bitrate controller adds it). Any thread.
    package var unsentBytes: Int { connection.unsentBytes }
    package var undeliveredBytes: Int { connection.unsentBytes }
    /// The kernel's view of the path (TCP_INFO), for the bitrate controller. Any thread.
    package var linkInfo: TCPLinkInfo? { connection.linkInfo }
    /// CLOCK_MONOTONIC nanoseconds when the last byte of the last tag was written (0 before any).
    var lastWriteMonotonicNs: UInt64 { lastWrite.load(ordering: .relaxed) }

    /// Outgoing RTMP chunk size, announced with Set Chunk Size before connect (the default is 128).
    static var outChunkSize: Int32 { RTMPConnection.outChunkSize }
    /// Chunk stream ids of the media: one per type so each keeps its own header compression.
    static let videoChannel: UInt8 = 4
    static let audioChannel: UInt8 = 5
    static let scriptChannel: UInt8 = 6
    static let drainIntervalNs: UInt64 = 1_000_000_000
    /// How long `close` may spend on FCUnpublish + deleteStream (a stop has 2 s in all).
    static let goodbyeTimeoutMs: Int32 = 300
    /// How long `open` watches the connection after NetStream.Publish.Start: nginx-rtmp's
    /// access rules (and some ingests for a bad key) confirm the publish, then hang up.
    var rejectionGraceMilliseconds = 250
    /// Extra PEM CA file trusted for `rtmps://` besides the system store (not a secret).
    let caFile: String?
    /// Loaded on the first `rtmps` open and kept for reconnects.
    private var tlsVerifier: TLSVerifier?

    /// Replaced by a reconnect request's `tcUrl` (the key stays).
    private var url: RTMPURL?
    /// Announce E-RTMP v2 support (`capsEx`: reconnect) in connect; off for servers that refuse it.
    package var enhancedConnect = true
    /// The server sent NetConnection.Connect.ReconnectRequest; the destination reconnects at
    /// the next keyframe (`open` then goes to `requestedTcUrl` when one was given).
    package private(set) var reconnectRequested = false
    private var requestedTcUrl: String?
    /// Set when the latest reconnect request would have left TLS (refused: the reconnect goes to
    /// the current URL); the line the destination says instead of its usual one.
    package private(set) var reconnectWarning: String?
    private let urlError: RTMPURLError?
    private let connection: RTMPConnection
    /// A write or read failed on this connection: it ends without a goodbye (`RTMPConnection.close`).
    private var linkBroken = false
    /// The message stream publish was sent on; 0 while not publishing.
    private var streamID: UInt32 = 0
    private var lastDrainNs: UInt64 = 0
    private let sent = Atomic<Int>(0)
    private let lastWrite = Atomic<UInt64>(0)

    /// - Parameters:
    ///   - url: `rtmp://host[:port]/app[/key]` or `rtmps://...`.
    ///   - streamKey: appended after the URL's path; empty when `url` already holds the key.
    ///   - connectTimeoutSeconds: TCP connect timeout, TLS handshake timeout and the wait for each server reply.
    ///   - caFile: for `rtmps://`, a PEM file of extra CAs to trust besides the system store.
    ///
    /// A malformed URL is reported by `open()` as `connectFailed` with a redaction-safe reason;
    /// an untrusted RTMPS server or an unusable `caFile` as `tlsRejected`.
    package init(url: String, streamKey: String, connectTimeoutSeconds: Int = 5, caFile: String? = nil) {
        self.caFile = caFile
        let name: String
        do {
            let parsed = try RTMPURL(url: url, streamKey: streamKey)
            self.url = parsed
            self.urlError = nil
            name = parsed.redacted
        } catch {
            self.url = nil
            self.urlError = error
            name = "rtmp (invalid URL)"
        }
        displayName = name
        self.connectTimeoutSeconds = max(1, connectTimeoutSeconds)
        connection = RTMPConnection(displayName: name, timeoutSeconds: connectTimeoutSeconds)
    }

    deinit { close() }

    package func open() throws(TransportError) {
        close()
        if reconnectRequested {
            reconnectRequested = false
            // Move to the server the request named, keeping the key; an unusable tcUrl keeps the old one.
            if let tc = requestedTcUrl, let key = url?.streamKey, let moved = try? RTMPURL(url: tc, streamKey: key),
               let current = url {
                // Never leave TLS: an rtmps stream told to go to rtmp:// reconnects where it was.
                if TLSDowngradeRule.allows(fromTLS: current.scheme == .rtmps, toTLS: moved.scheme == .rtmps) { url = moved }
            }
            requestedTcUrl = nil
        }
        guard let url else {
            throw TransportError.connectFailed(urlError?.description ?? "invalid RTMP URL")
        }
        sent.store(0, ordering: .relaxed)
        lastWrite.store(0, ordering: .relaxed)

        // GnuTLS and the trust store first: a machine without GnuTLS learns it before any connect.
        let verifier = url.scheme == .rtmps ? try loadVerifier() : nil
        try connection.open(host: url.host, port: url.port, verifier: verifier)
        do {
            try publish(url: url)
        } catch {
            // A refusal was an answer: the connection works and ends politely. Anything else
            // is a broken link (see `RTMPConnection.close`).
            connection.close(broken: !error.isRefusal && !isStreamNameInUse(error))
            streamID = 0
            throw error
        }
        connection.enter(.streaming)
        connection.endOpening()
        lastDrainNs = UInt64(MediaTime.now())
    }

    /// Sends one packet as an RTMP message: its FLV tag body, framed in the packet's headroom.
    package func write(_ packet: EncodedPacket) throws(TransportError) {
        guard connection.isOpen, streamID != 0 else {
            throw TransportError.writeFailed("\(displayName): not connected")
        }
        try packet.withFLVTag { (tag) throws(TransportError) in try send(tag) }
    }

    private func send(_ tag: FLVTag) throws(TransportError) {
        let channel: UInt8
        switch tag.type {
        case .video: channel = Self.videoChannel
        case .audio: channel = Self.audioChannel
        case .scriptData: channel = Self.scriptChannel
        }
        // FLV tag types equal RTMP message types 8/9/18; a script body already starts with
        // "@setDataFrame" "onMetaData" (StreamMetadata).
        do {
            try connection.sendMedia(channel: channel, type: tag.type.rawValue, streamID: streamID,
                                     timestamp: tag.timestampMs, payload: tag.body)
        } catch {
            linkBroken = true
            throw error
        }
        let now = UInt64(MediaTime.now())
        sent.add(tag.body.count, ordering: .relaxed)
        lastWrite.store(now, ordering: .relaxed)
        if now &- lastDrainNs >= Self.drainIntervalNs {
            lastDrainNs = now
            do { try connection.drain { (reply) throws(TransportError) in try handleStatus(reply) } } catch {
                linkBroken = true
                throw error
            }
        }
    }

    /// Shuts the socket down so a write blocked on a stalled link (or a reconnect's open)
    /// returns at once (the stop deadline has passed). The fd stays open until `close()` on the
    /// sender thread.
    package func abortPendingIO() {
        connection.abort()
    }

    /// A healthy connection says goodbye and closes with a FIN; a broken one is reset (see
    /// `RTMPConnection.close(broken:)`).
    package func close() {
        let broken = linkBroken || connection.wasAborted
        if connection.isOpen, streamID != 0, !broken {
            connection.sendGoodbye(key: url?.streamKey ?? "", streamID: streamID, timeoutMs: Self.goodbyeTimeoutMs)
        }
        connection.close(broken: broken)
        streamID = 0
        linkBroken = false
    }

    // MARK: - The publish state machine

    /// The verifier (GnuTLS loaded, trust store read) made on the first `rtmps` open, kept for reconnects.
    private func loadVerifier() throws(TransportError) -> TLSVerifier {
        if let existing = tlsVerifier { return existing }
        let verifier = try TLSVerifier(extraCAFile: caFile)
        tlsVerifier = verifier
        return verifier
    }

    /// connect, releaseStream + FCPublish + createStream, publish; each reply awaited; then the
    /// rejection grace.
    private func publish(url: RTMPURL) throws(TransportError) {
        let c = connection
        let key = url.streamKey ?? ""
        c.enter(.awaitingConnect)
        try c.sendCommand(containsKey: false) {
            RTMPCommand.connect(app: url.app, tcUrl: url.tcUrl, capsEx: enhancedConnect ? RTMPCommand.capsExReconnect : nil,
                                into: $0)
        }
        _ = try c.awaitReply { (reply) throws(TransportError) -> Bool? in
            try handleStatus(reply)
            guard reply.transaction == RTMPCommand.connectTransaction else { return nil }
            if reply.name == "_result" { return true }
            if reply.name == "_error" { throw refusal("server refused connect to app '\(url.app)'", reply) }
            return nil
        }

        c.enter(.creatingStream)
        try c.sendCommand(containsKey: true) {
            RTMPCommand.streamNameCommand("releaseStream", transaction: RTMPCommand.releaseStreamTransaction, key: key, into: $0)
        }
        try c.sendCommand(containsKey: true) {
            RTMPCommand.streamNameCommand("FCPublish", transaction: RTMPCommand.fcPublishTransaction, key: key, into: $0)
        }
        try c.sendCommand(containsKey: false) { RTMPCommand.createStream(into: $0) }
        // releaseStream/FCPublish replies (nginx sends none, others _result or _error) do not matter.
        let created: UInt32 = try c.awaitReply { (reply) throws(TransportError) -> UInt32? in
            try handleStatus(reply)
            guard reply.transaction == RTMPCommand.createStreamTransaction else { return nil }
            if reply.name == "_error" { throw refusal("server refused createStream", reply) }
            guard reply.name == "_result" else { return nil }
            guard let id = reply.arguments.last?.number, id >= 1, id <= Double(UInt32.max) else {
                throw .connectFailed("\(displayName): createStream answered without a stream id")
            }
            return UInt32(id)
        }

        c.enter(.awaitingPublish)
        try c.sendCommand(streamID: created, containsKey: true) { RTMPCommand.publish(key: key, into: $0) }
        streamID = created
        _ = try c.awaitReply { (reply) throws(TransportError) -> Bool? in
            if reply.name == "onStatus", reply.code == "NetStream.Publish.Start" { return true }
            try handleStatus(reply)
            if reply.name == "_error", reply.transaction == RTMPCommand.publishTransaction {
                throw refusal("server refused publish", reply)
            }
            return nil
        }
        // Still `.awaitingPublish`: a hang-up within the grace is the answer to publish.
        try c.watch(milliseconds: rejectionGraceMilliseconds) { (reply) throws(TransportError) in try handleStatus(reply) }
    }

    /// The status messages that matter in every stage: an E-RTMP reconnect request (noted;
    /// returns false) and an error-level onStatus (a refusal, or mid-stream the end of the stream).
    /// nil for anything else.
    @discardableResult
    private func handleStatus(_ reply: RTMPCommand.Reply) throws(TransportError) -> Bool? {
        guard reply.name == "onStatus" else { return nil }
        if enhancedConnect, reply.code == RTMPCommand.reconnectRequestCode {
            reconnectRequested = true
            requestedTcUrl = reply.arguments.reversed().lazy.compactMap { $0["tcUrl"]?.string }.first
            reconnectWarning = nil
            if let tc = requestedTcUrl, let current = url, let moved = try? RTMPURL(url: tc, streamKey: current.streamKey ?? ""),
               !TLSDowngradeRule.allows(fromTLS: current.scheme == .rtmps, toTLS: moved.scheme == .rtmps) {
                reconnectWarning = TLSDowngradeRule.refusal(displayName, what: "the server's reconnect request", to: moved.redacted)
                requestedTcUrl = nil
            }
            return false
        }
        if reply.level == "error" { throw refusal("server refused publish or ended the stream", reply) }
        return nil
    }

    /// A refusal naming the server's status code (with the key, should it echo it, redacted).
    private func refusal(_ what: String, _ reply: RTMPCommand.Reply) -> TransportError {
        connection.fault(.refused(what: what, code: reply.code.map(redacted)))
    }

    private func isStreamNameInUse(_ error: TransportError) -> Bool {
        if case .streamNameInUse = error { return true }
        return false
    }

    /// `text` with the stream key, should a server echo it, replaced by "****".
    private func redacted(_ text: String) -> String {
        guard let key = url?.streamKey, !key.isEmpty else { return text }
        return text.replacing(key, with: "****")
    }
}
