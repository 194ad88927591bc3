import Glibc
import Synchronization

/// A `TagSink` that publishes FLV tags to an RTMP/RTMPS server, speaking RTMP itself.
///
/// `open` connects (TCP with a real connect timeout; for `rtmps://` first a verified TLS
/// session, see `TLSVerifier`), runs the plain handshake, announces a 4096-byte chunk size, then
/// connect → releaseStream, FCPublish, createStream → publish(key, "live"), and watches the
/// connection for `rejectionGraceMilliseconds` (nginx-rtmp's access rules confirm a publish and
/// then hang up). `write` chunks each tag body into one preallocated output buffer as one RTMP
/// message (audio 8, video 9, data 18) with its absolute timestamp and sends it in one call. About
/// once a second it reads whatever the server sent, without blocking: acknowledgements owed, pings
/// answered, status. `close` sends FCUnpublish + deleteStream, then closes.
///
/// Refusals: a `_error` reply, an error-level onStatus (NetStream.Publish.BadName, ...), or the
/// server closing the connection after the handshake and before the grace period ends is
/// `publishRejected` (never retried); a server that stays connected but silent is
/// `connectFailed` (a network fault, retried). Messages carry `displayName` and never the key;
/// the key's bytes are zeroed from our buffers once sent.
///
/// `open`/`write`/`close` come from the destination's single sender thread; `bytesSent`,
/// `lastWriteMonotonicNs` and `abortPendingIO` may be used from any thread.
package final class RTMPPublisher: TagSink, @unchecked Sendable {
    /// The destination with the key replaced by "****".
    package let displayName: String
    package var isNetworkPublisher: Bool { true }
    package let connectTimeoutSeconds: Int
    /// Tag body bytes handed to the socket since `open`.
    package var bytesSent: Int { sent.load(ordering: .relaxed) }
    /// CLOCK_MONOTONIC nanoseconds when the last byte of the last tag was written (0 before any).
    package var lastWriteMonotonicNs: UInt64 { lastWrite.load(ordering: .relaxed) }

    /// Outgoing RTMP chunk size, announced with Set Chunk Size before connect (the default is 128).
    package static let outChunkSize: Int32 = 4096
    /// The output buffer grows (rarely) past this for a larger tag; a 720p keyframe fits.
    static let initialOutputCapacity = 512 << 10
    static let commandCapacity = 4096
    static let receiveCapacity = 16 << 10
    /// Chunk stream ids: protocol control, commands, then one per media type so each keeps its
    /// own header compression.
    static let controlChannel: UInt8 = 2
    static let commandChannel: UInt8 = 3
    static let videoChannel: UInt8 = 4
    static let audioChannel: UInt8 = 5
    static let scriptChannel: UInt8 = 6
    static let drainIntervalNs: UInt64 = 1_000_000_000
    /// How long `close` may spend on FCUnpublish + deleteStream (a stop has 2 s in all).
    static let goodbyeTimeoutMs: Int32 = 300
    /// How long `open` watches the connection after NetStream.Publish.Start: nginx-rtmp's
    /// access rules (and some ingests for a bad key) confirm the publish, then hang up.
    package var rejectionGraceMilliseconds = 250
    /// Extra PEM CA file trusted for `rtmps://` besides the system store (not a secret).
    package let caFile: String?
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
    private let urlError: RTMPURLError?
    private var socket: RTMPSocket?
    /// The connected socket, readable from the thread that stops the session.
    private let socketForAbort = Atomic<Int32>(-1)
    /// A write or read failed on this connection, or a stop cut it short: it ends with an RST
    /// and no goodbye (see `RTMPSocket.close(abortive:)`).
    private var linkBroken = false
    private let ioAborted = Atomic<Bool>(false)
    /// The message stream publish was sent on; 0 while not publishing.
    private var streamID: UInt32 = 0
    private var writer = RTMPChunkWriter()
    private var reader = RTMPChunkReader()
    /// Chunked bytes of the message being sent (and the handshake packets).
    private var output: UnsafeMutableRawPointer
    private var outputCapacity: Int
    /// AMF0 / control payloads before chunking.
    private let command: UnsafeMutableRawPointer
    private let receiveBuffer: UnsafeMutableRawPointer
    /// The server's Window Acknowledgement Size (0: none asked) and what we acknowledged.
    private var serverWindow: UInt32 = 0
    private var acknowledgedBytes: UInt64 = 0
    /// The window we last announced in answer to Set Peer Bandwidth.
    private var announcedWindow: UInt32 = 0
    private var lastDrainNs: UInt64 = 0
    private let sent = Atomic<Int>(0)
    private let lastWrite = Atomic<UInt64>(0)

    private var timeoutMs: Int32 { Int32(connectTimeoutSeconds * 1000) }
    /// A write that makes no progress this long is a dead link.
    private var sendTimeoutMs: Int32 { Int32(max(10, connectTimeoutSeconds * 2) * 1000) }

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
        do {
            let parsed = try RTMPURL(url: url, streamKey: streamKey)
            self.url = parsed
            self.urlError = nil
            self.displayName = parsed.redacted
        } catch {
            self.url = nil
            self.urlError = error
            self.displayName = "rtmp (invalid URL)"
        }
        self.connectTimeoutSeconds = max(1, connectTimeoutSeconds)
        outputCapacity = Self.initialOutputCapacity
        output = .allocate(byteCount: outputCapacity, alignment: 16)
        command = .allocate(byteCount: Self.commandCapacity, alignment: 16)
        receiveBuffer = .allocate(byteCount: Self.receiveCapacity, alignment: 16)
    }

    deinit {
        close()
        output.deallocate()
        command.deallocate()
        receiveBuffer.deallocate()
    }

    package func open() throws {
        close()
        if reconnectRequested {
            reconnectRequested = false
            // Move to the server the request named, keeping the key; an unusable tcUrl keeps the old one.
            if let tc = requestedTcUrl, let key = url?.streamKey, let moved = try? RTMPURL(url: tc, streamKey: key) {
                url = moved
            }
            requestedTcUrl = nil
        }
        guard let url else {
            throw TransportError.connectFailed(urlError?.description ?? "invalid RTMP URL")
        }
        sent.store(0, ordering: .relaxed)
        lastWrite.store(0, ordering: .relaxed)
        writer.reset()
        reader = RTMPChunkReader()
        serverWindow = 0
        acknowledgedBytes = 0
        announcedWindow = 0

        // GnuTLS and the trust store first: a machine without GnuTLS learns it before any connect.
        let verifier = url.scheme == .rtmps ? try loadVerifier() : nil
        let s = try RTMPSocket.connect(host: url.host, port: url.port, timeoutSeconds: connectTimeoutSeconds,
                                       displayName: displayName)
        socket = s
        // From here a stop can cut a handshake that crawls over a stalled link.
        socketForAbort.store(s.fd, ordering: .releasing)
        do {
            if let verifier {
                // Verified before any RTMP byte (see `TLSVerifier`).
                try s.startTLS(verifier: verifier, host: url.host, timeoutMs: connectTimeoutSeconds * 1000,
                               displayName: displayName)
            }
            try handshake(s)
            try connectAndPublish(s, url: url)
            try confirmPublishSurvives(s)
        } catch {
            abandon()
            throw error
        }
        lastDrainNs = UInt64(MediaTime.now())
    }

    package func write(_ tag: FLVTag) throws {
        guard let s = socket, streamID != 0 else {
            throw TransportError.writeFailed("\(displayName): not connected")
        }
        let size = tag.body.count
        let needed = RTMPChunkWriter.maxEncodedSize(payloadCount: size, chunkSize: writer.chunkSize)
        if needed > outputCapacity { grow(to: needed) }
        let channel: UInt8
        switch tag.type {
        case .video: channel = Self.videoChannel
        case .audio: channel = Self.audioChannel
        case .scriptData: channel = Self.scriptChannel
        }
        // FLV tag types equal RTMP message types 8/9/18; a script body already starts with
        // "@setDataFrame" "onMetaData" (StreamMetadata).
        guard let count = writer.encode(chunkStreamID: channel, messageType: tag.type.rawValue, messageStreamID: streamID,
                                        timestamp: tag.timestampMs, payload: tag.body,
                                        into: UnsafeMutableRawBufferPointer(start: output, count: outputCapacity)) else {
            throw TransportError.writeFailed("\(displayName): a \(size)-byte tag is too large for RTMP")
        }
        do { try s.send(output, count: count, timeoutMs: sendTimeoutMs) } catch {
            linkBroken = true
            throw TransportError.writeFailed("\(displayName): send failed: \(Self.describe(error))")
        }
        let now = UInt64(MediaTime.now())
        sent.add(size, ordering: .relaxed)
        lastWrite.store(now, ordering: .relaxed)
        if now &- lastDrainNs >= Self.drainIntervalNs {
            lastDrainNs = now
            do { try drainIncoming(s) } catch {
                linkBroken = true
                throw error
            }
        }
    }

    /// Shuts the socket down so a write blocked on a stalled link returns at once (the stop
    /// deadline has passed). The fd itself stays open until `close()` on the sender thread.
    package func abortPendingIO() {
        ioAborted.store(true, ordering: .releasing)
        RTMPSocket.shutdownNow(socketForAbort.load(ordering: .acquiring))
    }

    /// A healthy connection says goodbye and closes with a FIN; a broken one is reset at once.
    package func close() {
        socketForAbort.store(-1, ordering: .releasing)
        guard let s = socket else { return }
        let broken = linkBroken || ioAborted.load(ordering: .acquiring)
        if streamID != 0 && !broken { sendGoodbye(s, key: url?.streamKey ?? "") }
        abandon(abortive: broken)
    }

    // MARK: - Opening

    /// The verifier (GnuTLS loaded, trust store read) made on the first `rtmps` open, kept for reconnects.
    private func loadVerifier() throws(TransportError) -> TLSVerifier {
        if let existing = tlsVerifier { return existing }
        let verifier = try TLSVerifier(extraCAFile: caFile)
        tlsVerifier = verifier
        return verifier
    }

    private func handshake(_ s: RTMPSocket) throws(TransportError) {
        do { try RTMPHandshake.perform(on: s, scratch: output, timeoutMs: timeoutMs) } catch {
            switch error {
            case .wrongVersion(let v):
                throw .connectFailed("\(displayName): not an RTMP server (handshake version \(v))")
            case .io(.timedOut):
                throw .connectFailed("\(displayName): RTMP handshake: no reply within \(connectTimeoutSeconds) s")
            case .io(let failure):
                throw .connectFailed("\(displayName): RTMP handshake failed: \(Self.describe(failure))")
            }
        }
    }

    /// Set Chunk Size, connect, releaseStream + FCPublish + createStream, publish; each reply awaited.
    private func connectAndPublish(_ s: RTMPSocket, url: RTMPURL) throws(TransportError) {
        let key = url.streamKey ?? ""
        try openingSend(s) { () throws(RTMPSocket.Failure) in
            try sendControl(s, type: RTMPMessageType.setChunkSize, value: UInt32(Self.outChunkSize))
            writer.setChunkSize(Int(Self.outChunkSize))
            try sendCommand(s, containsKey: false) { RTMPCommand.connect(app: url.app, tcUrl: url.tcUrl,
                                                                       capsEx: enhancedConnect ? RTMPCommand.capsExReconnect : nil,
                                                                       into: $0) }
        }
        _ = try awaitReply("connect") { (reply) throws(TransportError) -> Bool? in
            guard reply.transaction == RTMPCommand.connectTransaction else { return nil }
            if reply.name == "_result" { return true }
            if reply.name == "_error" { throw refusal("server refused connect to app '\(url.app)'", reply) }
            return nil
        }

        try openingSend(s) { () throws(RTMPSocket.Failure) in
            try sendCommand(s, containsKey: true) {
                RTMPCommand.streamNameCommand("releaseStream", transaction: RTMPCommand.releaseStreamTransaction, key: key, into: $0)
            }
            try sendCommand(s, containsKey: true) {
                RTMPCommand.streamNameCommand("FCPublish", transaction: RTMPCommand.fcPublishTransaction, key: key, into: $0)
            }
            try sendCommand(s, containsKey: false) { RTMPCommand.createStream(into: $0) }
        }
        // releaseStream/FCPublish replies (nginx sends none, others _result or _error) do not matter.
        let created: UInt32 = try awaitReply("createStream") { (reply) throws(TransportError) -> UInt32? in
            guard reply.transaction == RTMPCommand.createStreamTransaction else { return nil }
            if reply.name == "_error" { throw refusal("server refused createStream", reply) }
            guard reply.name == "_result" else { return nil }
            guard let id = reply.arguments.last?.number, id >= 1, id <= Double(UInt32.max) else {
                throw .connectFailed("\(displayName): createStream answered without a stream id")
            }
            return UInt32(id)
        }

        try openingSend(s) { () throws(RTMPSocket.Failure) in
            try sendCommand(s, streamID: created, containsKey: true) { RTMPCommand.publish(key: key, into: $0) }
        }
        streamID = created
        _ = try awaitReply("publish") { (reply) throws(TransportError) -> Bool? in
            if reply.name == "onStatus", reply.code == "NetStream.Publish.Start" { return true }
            if reply.name == "_error", reply.transaction == RTMPCommand.publishTransaction {
                throw refusal("server refused publish", reply)
            }
            return nil // error-level statuses are refusals in `handleIncoming`
        }
    }

    /// Reads server messages for `rejectionGraceMilliseconds`; a hang-up in that window
    /// means the publish was refused after all.
    private func confirmPublishSurvives(_ s: RTMPSocket) throws(TransportError) {
        let deadline = MediaTime.now() + Int64(max(0, rejectionGraceMilliseconds)) * 1_000_000
        while true {
            let remainingMs = (deadline - MediaTime.now()) / 1_000_000
            if remainingMs <= 0 { return }
            do {
                let n = try s.receive(into: receiveBuffer, capacity: Self.receiveCapacity, timeoutMs: Int32(remainingMs) + 1)
                if n > 0 { try consume(s, count: n) { _ in } }
            } catch let failure as RTMPSocket.Failure {
                if failure == .closed {
                    throw .publishRejected("\(displayName): server closed the connection right after publish")
                }
                throw .connectFailed("\(displayName): \(Self.describe(failure))")
            } catch let error as TransportError {
                throw error
            } catch {
                throw .connectFailed("\(displayName): \(error)")
            }
        }
    }

    /// Sends during `open`: a peer that hung up refused us; anything else is a network fault.
    private func openingSend(_ s: RTMPSocket, _ body: () throws(RTMPSocket.Failure) -> Void) throws(TransportError) {
        do { try body() } catch {
            if error == .closed {
                throw .publishRejected("\(displayName): server refused publish or closed the connection")
            }
            throw .connectFailed("\(displayName): sending to the server failed: \(Self.describe(error))")
        }
    }

    /// Reads server messages until `handle` returns a value, answering control messages on the
    /// way. A hang-up is a refusal; silence with the connection still open, a network fault.
    private func awaitReply<T>(_ step: String,
                               _ handle: (RTMPCommand.Reply) throws(TransportError) -> T?) throws(TransportError) -> T {
        let deadline = MediaTime.now() + Int64(timeoutMs) * 1_000_000
        var answer: T?
        while true {
            guard let s = socket else { throw .connectFailed("\(displayName): not connected") }
            // Bytes already received may hold the reply (several messages often arrive together).
            try consume(s: s, count: 0) { (reply) throws(TransportError) in
                if answer == nil { answer = try handle(reply) }
            }
            if let answer { return answer }
            let remainingMs = (deadline - MediaTime.now()) / 1_000_000
            if remainingMs <= 0 {
                if s.peerStillOpen {
                    throw .connectFailed("\(displayName): no reply to \(step) within \(connectTimeoutSeconds) s")
                }
                throw .publishRejected("\(displayName): server refused publish or closed the connection")
            }
            let n: Int
            do { n = try s.receive(into: receiveBuffer, capacity: Self.receiveCapacity, timeoutMs: Int32(remainingMs)) } catch {
                if error == .closed {
                    throw .publishRejected("\(displayName): server refused publish or closed the connection")
                }
                throw .connectFailed("\(displayName): waiting for the \(step) reply: \(Self.describe(error))")
            }
            if n > 0 {
                try consume(s: s, count: n) { (reply) throws(TransportError) in
                    if answer == nil { answer = try handle(reply) }
                }
            }
        }
    }

    /// `consume` with the socket's failures reported as `open` reports them.
    private func consume(s: RTMPSocket, count: Int, _ onReply: (RTMPCommand.Reply) throws(TransportError) -> Void) throws(TransportError) {
        do { try consume(s, count: count, onReply) } catch let error as TransportError {
            throw error
        } catch let failure as RTMPSocket.Failure {
            if failure == .closed { throw .publishRejected("\(displayName): server refused publish or closed the connection") }
            throw .connectFailed("\(displayName): \(Self.describe(failure))")
        } catch {
            throw .connectFailed("\(displayName): \(error)")
        }
    }

    /// A refusal naming the server's status code (with the key, should it echo it, redacted).
    private func refusal(_ what: String, _ reply: RTMPCommand.Reply) -> TransportError {
        let code = reply.code.map { " (\(redacted($0)))" } ?? ""
        if reply.code == "NetStream.Publish.BadName" { return .streamNameInUse("\(displayName): \(what)\(code)") }
        return .publishRejected("\(displayName): \(what)\(code)")
    }

    // MARK: - Streaming

    /// Handles whatever the server sent, without blocking: acks owed, pings, bandwidth, status.
    private func drainIncoming(_ s: RTMPSocket) throws {
        for _ in 0..<64 {
            let n: Int
            do { n = try s.receive(into: receiveBuffer, capacity: Self.receiveCapacity, timeoutMs: 0) } catch {
                if error == .closed { throw TransportError.writeFailed("\(displayName): server closed the connection") }
                throw TransportError.writeFailed("\(displayName): \(Self.describe(error))")
            }
            if n == 0 { return }
            do { try consume(s, count: n) { _ in } } catch let error as TransportError {
                if case .publishRejected(let why) = error { throw TransportError.writeFailed(why) }
                throw error
            } catch {
                throw TransportError.writeFailed("\(displayName): \(error)")
            }
        }
    }

    /// Feeds `count` received bytes (from `receiveBuffer`) to the reader, answers control
    /// messages, hands command replies to `onReply`, and acknowledges as the window asks.
    /// Throws `RTMPSocket.Failure` (answering failed), `TransportError` (refusal, bad stream).
    private func consume(_ s: RTMPSocket, count: Int, _ onReply: (RTMPCommand.Reply) throws(TransportError) -> Void) throws {
        if count > 0 {
            reader.append(UnsafeRawBufferPointer(start: receiveBuffer, count: count))
            memset(receiveBuffer, 0, count)
        }
        while true {
            let message: RTMPMessage?
            do { message = try reader.next() } catch {
                throw TransportError.connectFailed("\(displayName): protocol error from server: \(error)")
            }
            guard let message else { break }
            if let reply = try handleIncoming(s, message) {
                if enhancedConnect, reply.name == "onStatus", reply.code == RTMPCommand.reconnectRequestCode {
                    reconnectRequested = true
                    requestedTcUrl = reply.arguments.reversed().lazy.compactMap { $0["tcUrl"]?.string }.first
                    continue
                }
                if reply.name == "onStatus", reply.level == "error" {
                    throw refusal("server refused publish or ended the stream", reply)
                }
                try onReply(reply)
            }
        }
        if serverWindow > 0 && reader.totalBytes &- acknowledgedBytes >= UInt64(serverWindow) {
            acknowledgedBytes = reader.totalBytes
            try sendControl(s, type: RTMPMessageType.acknowledgement, value: UInt32(truncatingIfNeeded: reader.totalBytes))
        }
    }

    /// Answers protocol control and user control messages; returns a decoded command, if any.
    private func handleIncoming(_ s: RTMPSocket, _ message: RTMPMessage) throws(RTMPSocket.Failure) -> RTMPCommand.Reply? {
        let p = message.payload
        switch message.type {
        case RTMPMessageType.windowAcknowledgementSize where p.count >= 4:
            serverWindow = RTMPChunkReader.be32(p, 0)
        case RTMPMessageType.setPeerBandwidth where p.count >= 4:
            // Answer with our Window Acknowledgement Size when it changes (spec §5.4.5).
            let window = RTMPChunkReader.be32(p, 0)
            if window != announcedWindow {
                announcedWindow = window
                try sendControl(s, type: RTMPMessageType.windowAcknowledgementSize, value: window)
            }
        case RTMPMessageType.userControl where p.count >= 6:
            let event = UInt16(p[0]) << 8 | UInt16(p[1])
            if event == RTMPMessageType.pingRequest {
                try sendPingResponse(s, timestamp: RTMPChunkReader.be32(p, 2))
            }
        case RTMPMessageType.commandAMF0:
            return RTMPCommand.Reply(payload: p)
        case 17 where !p.isEmpty: // AMF3 command: a format byte, then AMF0 values
            return RTMPCommand.Reply(payload: Array(p.dropFirst()))
        default:
            break
        }
        return nil
    }

    // MARK: - Sending messages

    /// A protocol control message with one 32-bit value (Set Chunk Size, Acknowledgement,
    /// Window Acknowledgement Size) on chunk stream 2, message stream 0.
    private func sendControl(_ s: RTMPSocket, type: UInt8, value: UInt32) throws(RTMPSocket.Failure) {
        var w = ByteCursor(base: command)
        w.put32(value)
        try sendMessage(s, channel: Self.controlChannel, type: type, streamID: 0, count: w.offset)
    }

    private func sendPingResponse(_ s: RTMPSocket, timestamp: UInt32) throws(RTMPSocket.Failure) {
        var w = ByteCursor(base: command)
        w.put16(RTMPMessageType.pingResponse)
        w.put32(timestamp)
        try sendMessage(s, channel: Self.controlChannel, type: RTMPMessageType.userControl, streamID: 0, count: w.offset)
    }

    /// Encodes a command with `encode` into `command`, sends it, and zeroes both buffers when it
    /// carried the key.
    private func sendCommand(_ s: RTMPSocket, streamID: UInt32 = 0, containsKey: Bool,
                             _ encode: (UnsafeMutableRawBufferPointer) -> Int?) throws(RTMPSocket.Failure) {
        guard let count = encode(UnsafeMutableRawBufferPointer(start: command, count: Self.commandCapacity)) else {
            throw .failed("command too large")
        }
        defer { if containsKey { memset(command, 0, count) } }
        try sendMessage(s, channel: Self.commandChannel, type: RTMPMessageType.commandAMF0, streamID: streamID,
                        count: count, containsKey: containsKey)
    }

    /// Chunks the first `count` bytes of `command` into `output` and sends them.
    private func sendMessage(_ s: RTMPSocket, channel: UInt8, type: UInt8, streamID: UInt32, count: Int,
                             containsKey: Bool = false) throws(RTMPSocket.Failure) {
        guard let n = writer.encode(chunkStreamID: channel, messageType: type, messageStreamID: streamID, timestamp: 0,
                                    payload: UnsafeRawBufferPointer(start: command, count: count),
                                    into: UnsafeMutableRawBufferPointer(start: output, count: outputCapacity)) else {
            throw .failed("message too large")
        }
        defer { if containsKey { memset(output, 0, n) } }
        try s.send(output, count: n, timeoutMs: sendTimeoutMs)
    }

    /// FCUnpublish + deleteStream, best effort and bounded: the connection ends either way.
    private func sendGoodbye(_ s: RTMPSocket, key: String) {
        guard let first = RTMPCommand.streamNameCommand("FCUnpublish", transaction: 6, key: key,
                                                        into: UnsafeMutableRawBufferPointer(start: command, count: Self.commandCapacity)),
              let a = writer.encode(chunkStreamID: Self.commandChannel, messageType: RTMPMessageType.commandAMF0,
                                    messageStreamID: 0, timestamp: 0,
                                    payload: UnsafeRawBufferPointer(start: command, count: first),
                                    into: UnsafeMutableRawBufferPointer(start: output, count: outputCapacity))
        else { return }
        memset(command, 0, first)
        var total = a
        if let second = RTMPCommand.deleteStream(streamID, into: UnsafeMutableRawBufferPointer(start: command, count: Self.commandCapacity)),
           let b = writer.encode(chunkStreamID: Self.commandChannel, messageType: RTMPMessageType.commandAMF0,
                                 messageStreamID: 0, timestamp: 0,
                                 payload: UnsafeRawBufferPointer(start: command, count: second),
                                 into: UnsafeMutableRawBufferPointer(start: output + a, count: outputCapacity - a)) {
            total += b
        }
        try? s.send(output, count: total, timeoutMs: Self.goodbyeTimeoutMs)
        memset(output, 0, total)
    }

    /// Closes without a goodbye (refused, failed or already said).
    private func abandon(abortive: Bool = false) {
        socketForAbort.store(-1, ordering: .releasing)
        socket?.close(abortive: abortive)
        socket = nil
        streamID = 0
        linkBroken = false
        ioAborted.store(false, ordering: .releasing)
    }

    private func grow(to needed: Int) {
        let capacity = max(needed, outputCapacity * 2)
        output.deallocate()
        output = .allocate(byteCount: capacity, alignment: 16)
        outputCapacity = capacity
    }

    /// `text` with the stream key, should a server echo it, replaced by "****".
    private func redacted(_ text: String) -> String {
        guard let key = url?.streamKey, !key.isEmpty else { return text }
        return text.replacing(key, with: "****")
    }

    private static func describe(_ failure: RTMPSocket.Failure) -> String {
        switch failure {
        case .closed: return "connection closed by the server"
        case .timedOut: return "no progress for the send/receive timeout (stalled link)"
        case .failed(let reason): return reason
        }
    }
}
