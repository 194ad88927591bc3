import Glibc
import Synchronization
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// The connection half of an RTMP publisher (the shape of HaishinKit's RTMPConnection, with
/// every buffer allocated once): the socket, the handshake, chunked I/O both ways, commands and
/// their replies, the control messages a server expects answered (acknowledgements, pings,
/// window sizes), and the one failure classifier (`RTMPFailureClassifier`) for all of it.
/// `RTMPPublisher` drives it through the publish state machine.
///
/// What the server sends costs bounded memory: one 16 KB receive buffer, the `RTMPChunkReader`'s
/// fixed arena, and per drain a bounded number of bytes read and one pong however many pings came.
///
/// Used from the sender thread, except `abort()` (any thread).
final class RTMPConnection {
    /// The destination with the key replaced by "****".
    let displayName: String
    let timeoutSeconds: Int
    /// Where the connection stands: gives a failure its meaning.
    private(set) var stage: RTMPStage = .handshaking

    /// Outgoing RTMP chunk size, announced with Set Chunk Size before connect (the default is 128).
    static let outChunkSize: Int32 = 4096
    /// The output buffer grows (rarely) past this for a larger tag; a 720p keyframe fits.
    static let initialOutputCapacity = 512 << 10
    static let commandCapacity = 4096
    static let receiveCapacity = 16 << 10
    /// Bytes one drain reads at most: a flooding server cannot keep the sender from its tags.
    static let drainBudgetBytes = 4 * receiveCapacity
    /// Chunk stream ids: protocol control, commands.
    static let controlChannel: UInt8 = 2
    static let commandChannel: UInt8 = 3

    private var socket: TCPSocket?
    /// A connection that broke while streaming, kept open (not reset) until a new TCP connect to
    /// the server succeeds: only then is it reset, because only then is the path known to carry
    /// the RST that ends the server's stale session (see `close(broken:)`).
    private var parked: TCPSocket?
    /// The connected socket, readable from the thread that stops the session.
    private let socketForAbort = Atomic<Int32>(-1)
    private let aborted = Atomic<Bool>(false)
    private var writer = RTMPChunkWriter()
    private let reader = RTMPChunkReader()
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
    /// The latest ping not yet answered (answered once per read burst: a flood costs one pong).
    private var pendingPing: UInt32?

    private var timeoutMs: Int32 { Int32(timeoutSeconds * 1000) }
    /// A write that makes no progress this long is a dead link.
    private var sendTimeoutMs: Int32 { Int32(max(10, timeoutSeconds * 2) * 1000) }

    init(displayName: String, timeoutSeconds: Int) {
        self.displayName = displayName
        self.timeoutSeconds = max(1, timeoutSeconds)
        outputCapacity = Self.initialOutputCapacity
        output = .allocate(byteCount: outputCapacity, alignment: 16)
        command = .allocate(byteCount: Self.commandCapacity, alignment: 16)
        receiveBuffer = .allocate(byteCount: Self.receiveCapacity, alignment: 16)
    }

    deinit {
        socket?.close(abortive: true)
        parked?.close(abortive: true)
        output.deallocate()
        command.deallocate()
        receiveBuffer.deallocate()
    }

    var isOpen: Bool { socket != nil }

    /// What wakes the waits of an open (connect, TLS, handshake, the publish replies); the
    /// process's stop unless a caller gives its own.
    var stop: StopFlag? = .process

    /// TCP (with a deadline), TLS when `verifier` is given, the handshake, Set Chunk Size.
    ///
    /// One deadline, `timeoutSeconds` from now, bounds this and everything until
    /// `endOpening()` (the publish replies): a server that trickles its bytes cannot stretch it.
    func open(host: String, port: Int, verifier: TLSVerifier?) throws(TransportError) {
        writer.reset()
        reader.reset()
        serverWindow = 0
        acknowledgedBytes = 0
        announcedWindow = 0
        pendingPing = nil
        stage = .handshaking
        let operation = TCPSocket.Operation(deadline: .after(seconds: timeoutSeconds), stop: stop)
        let s = try TCPSocket.connect(host: host, port: port, timeoutSeconds: timeoutSeconds, operation: operation,
                                       displayName: displayName)
        // The path carries packets again: reset the connection a lost link left behind, before
        // publishing, so the server ends that session instead of answering "already publishing".
        if let old = parked {
            old.close(abortive: true)
            parked = nil
        }
        socket = s
        // From here a stop can cut a handshake that crawls over a stalled link.
        socketForAbort.store(s.fd, ordering: .releasing)
        do { try prepare(s, host: host, verifier: verifier) } catch {
            close(broken: true)
            throw error
        }
    }

    /// TLS when asked, the handshake, Set Chunk Size.
    private func prepare(_ s: TCPSocket, host: String, verifier: TLSVerifier?) throws(TransportError) {
        // A stop that came before the descriptor was published could not cut it.
        if wasAborted { throw fault(.receive(.closed)) }
        if let verifier {
            // Verified before any RTMP byte (see `TLSVerifier`).
            try s.startTLS(verifier: verifier, host: host, timeoutMs: timeoutSeconds * 1000, displayName: displayName)
        }
        do { try RTMPHandshake.perform(on: s, scratch: output, timeoutMs: timeoutMs) } catch {
            switch error {
            case .wrongVersion(let v):
                throw .connectFailed("\(displayName): not an RTMP server (handshake version \(v))")
            case .io(let failure):
                throw fault(.receive(failure))
            }
        }
        try sendControl(type: RTMPMessageType.setChunkSize, value: UInt32(Self.outChunkSize))
        writer.setChunkSize(Int(Self.outChunkSize))
    }

    /// The open is over (publishing): from here writes are bounded by progress, and only a stop's
    /// `abort()` cuts them (the last drain of a stop must not be woken by the stop itself).
    func endOpening() { socket?.operation = .unbounded }

    /// Moves the connection to `next` (the publisher's state machine).
    func enter(_ next: RTMPStage) { stage = next }

    /// `cause` as a `TransportError`, given the stage and whether our own stop caused it.
    func fault(_ cause: RTMPFailureCause) -> TransportError {
        RTMPFailureClassifier.classify(cause, stage: stage, stoppedByUs: aborted.load(ordering: .acquiring),
                                       name: displayName, timeoutSeconds: timeoutSeconds)
    }

    // MARK: - Sending

    /// Encodes a command with `encode` and sends it on the command channel; zeroes our copies
    /// when it carried the key.
    func sendCommand(streamID: UInt32 = 0, containsKey: Bool,
                             _ encode: (UnsafeMutableRawBufferPointer) -> Int?) throws(TransportError) {
        guard let count = encode(UnsafeMutableRawBufferPointer(start: command, count: Self.commandCapacity)) else {
            throw .connectFailed("\(displayName): command too large")
        }
        defer { if containsKey { memset(command, 0, count) } }
        try sendMessage(channel: Self.commandChannel, type: RTMPMessageType.commandAMF0, streamID: streamID,
                        count: count, containsKey: containsKey)
    }

    /// One tag body as one RTMP message on `channel`. Grows the output buffer (rarely) for a larger tag.
    func sendMedia(channel: UInt8, type: UInt8, streamID: UInt32, timestamp: UInt32,
                           payload: UnsafeRawBufferPointer) throws(TransportError) {
        guard let s = socket else { throw .writeFailed("\(displayName): not connected") }
        let needed = RTMPChunkWriter.maxEncodedSize(payloadCount: payload.count, chunkSize: writer.chunkSize)
        if needed > outputCapacity { grow(to: needed) }
        guard let count = writer.encode(chunkStreamID: channel, messageType: type, messageStreamID: streamID,
                                        timestamp: timestamp, payload: payload,
                                        into: UnsafeMutableRawBufferPointer(start: output, count: outputCapacity)) else {
            throw .writeFailed("\(displayName): a \(payload.count)-byte tag is too large for RTMP")
        }
        do { try s.send(output, count: count, timeoutMs: sendTimeoutMs) } catch {
            throw fault(.send(error))
        }
    }

    /// FCUnpublish + deleteStream, best effort within `timeoutMs`: the connection ends either way.
    func sendGoodbye(key: String, streamID: UInt32, timeoutMs: Int32) {
        guard let s = socket,
              let first = RTMPCommand.streamNameCommand("FCUnpublish", transaction: 6, key: key,
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
        try? s.send(output, count: total, timeoutMs: timeoutMs)
        memset(output, 0, total)
    }

    /// A protocol control message with one 32-bit value (Set Chunk Size, Acknowledgement,
    /// Window Acknowledgement Size) on chunk stream 2, message stream 0.
    private func sendControl(type: UInt8, value: UInt32) throws(TransportError) {
        var w = ByteCursor(base: command)
        w.put32(value)
        try sendMessage(channel: Self.controlChannel, type: type, streamID: 0, count: w.offset)
    }

    private func sendPingResponse(timestamp: UInt32) throws(TransportError) {
        var w = ByteCursor(base: command)
        w.put16(RTMPMessageType.pingResponse)
        w.put32(timestamp)
        try sendMessage(channel: Self.controlChannel, type: RTMPMessageType.userControl, streamID: 0, count: w.offset)
    }

    /// Chunks the first `count` bytes of `command` into `output` and sends them.
    private func sendMessage(channel: UInt8, type: UInt8, streamID: UInt32, count: Int,
                             containsKey: Bool = false) throws(TransportError) {
        guard let s = socket else { throw fault(.send(.closed)) }
        guard let n = writer.encode(chunkStreamID: channel, messageType: type, messageStreamID: streamID, timestamp: 0,
                                    payload: UnsafeRawBufferPointer(start: command, count: count),
                                    into: UnsafeMutableRawBufferPointer(start: output, count: outputCapacity)) else {
            throw .connectFailed("\(displayName): message too large")
        }
        defer { if containsKey { memset(output, 0, n) } }
        do { try s.send(output, count: n, timeoutMs: sendTimeoutMs) } catch { throw fault(.send(error)) }
    }

    // MARK: - Receiving

    /// Reads server messages until `handle` returns a value (or `timeoutMs` passes, which is
    /// the classifier's `.timedOut`, or a hang-up), answering control messages on the way.
    func awaitReply<T>(timeoutMs: Int32? = nil,
                               _ handle: (RTMPCommand.Reply) throws(TransportError) -> T?) throws(TransportError) -> T {
        let deadline = MediaTime.now() + Int64(timeoutMs ?? self.timeoutMs) * 1_000_000
        var answer: T?
        // Bytes already received may hold the reply (several messages often arrive together).
        try consume(count: 0) { (reply) throws(TransportError) in if answer == nil { answer = try handle(reply) } }
        while answer == nil {
            guard let s = socket else { throw fault(.receive(.closed)) }
            let remainingMs = (deadline - MediaTime.now()) / 1_000_000
            if remainingMs <= 0 { throw fault(.receive(s.peerStillOpen ? .timedOut : .closed)) }
            let n: Int
            do { n = try s.receive(into: receiveBuffer, capacity: Self.receiveCapacity, timeoutMs: Int32(remainingMs)) } catch {
                throw fault(.receive(error))
            }
            if n > 0 {
                try consume(count: n) { (reply) throws(TransportError) in if answer == nil { answer = try handle(reply) } }
            }
        }
        return answer!
    }

    /// Reads for `milliseconds`, handing every reply to `onReply`; a failure (a hang-up) throws.
    func watch(milliseconds: Int, _ onReply: (RTMPCommand.Reply) throws(TransportError) -> Void) throws(TransportError) {
        let deadline = MediaTime.now() + Int64(max(0, milliseconds)) * 1_000_000
        while true {
            let remainingMs = (deadline - MediaTime.now()) / 1_000_000
            if remainingMs <= 0 { return }
            guard let s = socket else { throw fault(.receive(.closed)) }
            let n: Int
            do { n = try s.receive(into: receiveBuffer, capacity: Self.receiveCapacity, timeoutMs: Int32(remainingMs) + 1) } catch {
                throw fault(.receive(error))
            }
            if n > 0 { try consume(count: n, onReply) }
        }
    }

    /// Handles what the server sent, without blocking and within `drainBudgetBytes`: acks owed,
    /// one pong for the latest ping, bandwidth, status (to `onReply`).
    func drain(_ onReply: (RTMPCommand.Reply) throws(TransportError) -> Void) throws(TransportError) {
        guard let s = socket else { throw fault(.receive(.closed)) }
        var budget = Self.drainBudgetBytes
        while budget > 0 {
            let n: Int
            do { n = try s.receive(into: receiveBuffer, capacity: min(Self.receiveCapacity, budget), timeoutMs: 0) } catch {
                throw fault(.receive(error))
            }
            if n == 0 { break }
            budget -= n
            try consume(count: n, onReply)
        }
    }

    /// Feeds `count` received bytes (from `receiveBuffer`) to the reader, answers control
    /// messages, hands command replies to `onReply`, and acknowledges as the window asks.
    private func consume(count: Int, _ onReply: (RTMPCommand.Reply) throws(TransportError) -> Void) throws(TransportError) {
        if count > 0 {
            reader.append(UnsafeRawBufferPointer(start: receiveBuffer, count: count))
            memset(receiveBuffer, 0, count)
        }
        while true {
            let message: RTMPMessage?
            do { message = try reader.next() } catch { throw fault(.protocolError(error)) }
            guard let message else { break }
            if let reply = try handleIncoming(message) { try onReply(reply) }
        }
        if let ping = pendingPing {
            pendingPing = nil
            try sendPingResponse(timestamp: ping)
        }
        if serverWindow > 0 && reader.totalBytes &- acknowledgedBytes >= UInt64(serverWindow) {
            acknowledgedBytes = reader.totalBytes
            try sendControl(type: RTMPMessageType.acknowledgement, value: UInt32(truncatingIfNeeded: reader.totalBytes))
        }
    }

    /// Answers protocol control and user control messages; returns a decoded command, if any.
    private func handleIncoming(_ message: RTMPMessage) throws(TransportError) -> RTMPCommand.Reply? {
        let p = message.payload
        switch message.type {
        case RTMPMessageType.windowAcknowledgementSize where p.count >= 4:
            serverWindow = RTMPChunkReader.be32(p, 0)
        case RTMPMessageType.setPeerBandwidth where p.count >= 4:
            // Answer with our Window Acknowledgement Size when it changes (spec §5.4.5).
            let window = RTMPChunkReader.be32(p, 0)
            if window != announcedWindow {
                announcedWindow = window
                try sendControl(type: RTMPMessageType.windowAcknowledgementSize, value: window)
            }
        case RTMPMessageType.userControl where p.count >= 6:
            let event = UInt16(p[0]) << 8 | UInt16(p[1])
            if event == RTMPMessageType.pingRequest { pendingPing = RTMPChunkReader.be32(p, 2) }
        case RTMPMessageType.commandAMF0:
            return RTMPCommand.Reply(payload: p)
        case 17 where !p.isEmpty: // AMF3 command: a format byte, then AMF0 values
            return RTMPCommand.Reply(payload: Array(p.dropFirst()))
        default:
            break
        }
        return nil
    }

    // MARK: - Ending

    /// Makes a pending or later I/O fail at once (a stop's deadline passed). Any thread; the fd
    /// stays open until `close` on the sender thread.
    func abort() {
        aborted.store(true, ordering: .releasing)
        TCPSocket.shutdownNow(socketForAbort.load(ordering: .acquiring))
    }

    /// Bytes sent into the kernel and not yet acknowledged by the server. Any thread.
    var unsentBytes: Int { TCPSocket.unsentBytes(socketForAbort.load(ordering: .acquiring)) }

    /// The kernel's TCP_INFO for this connection (nil when not connected). Any thread.
    var linkInfo: TCPLinkInfo? { TCPLinkInfo.read(socketForAbort.load(ordering: .acquiring)) }

    /// True once `abort()` cut this connection.
    var wasAborted: Bool { aborted.load(ordering: .acquiring) }

    /// Ends the connection. A healthy one closes with a FIN after what was sent.
    ///
    /// A `broken` one (a write or read failed, or a stop cut it) must end the server's session
    /// even when the path is down, so it is reset (an RST, unsent bytes discarded: a FIN would
    /// wait behind bytes that cannot pass a path-MTU black hole) — but not now: an RST sent into
    /// a black hole is lost once and never repeated, and the server then keeps the stale session
    /// ("already publishing") until its own timeout. So the socket is parked, and reset when the
    /// next TCP connect to the server succeeds (`open`), i.e. when the path carries packets again.
    /// A stop (`abort()`) resets at once: no reconnect follows.
    func close(broken: Bool) {
        socketForAbort.store(-1, ordering: .releasing)
        stage = .handshaking
        let stopped = wasAborted
        // The stop's cut is consumed by this close (a later open is a new run's).
        defer { aborted.store(false, ordering: .releasing) }
        if stopped { releaseParked() }
        guard let s = socket else { return }
        socket = nil
        if !broken {
            s.close(abortive: false)
        } else if stopped {
            s.close(abortive: true)
        } else {
            parked?.close(abortive: true)
            parked = s
        }
    }

    /// Resets a parked connection now (the run is over).
    func releaseParked() {
        parked?.close(abortive: true)
        parked = nil
    }

    private func grow(to needed: Int) {
        let capacity = max(needed, outputCapacity * 2)
        output.deallocate()
        output = .allocate(byteCount: capacity, alignment: 16)
        outputCapacity = capacity
    }
}
