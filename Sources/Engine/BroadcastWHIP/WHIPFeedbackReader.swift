import Glibc
import Synchronization
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// The `bk-whip-rx` thread of one WHIP session: reads the session's UDP socket as datagrams arrive,
/// so the endpoint's feedback acts at once instead of at the sender's next tag.
///
/// - STUN: the endpoint's checks are answered; our consent check goes out every 5 s (RFC 7675).
/// - SRTCP: PLI/FIR calls the keyframe requester at once (the video lane's atomic flag); generic
///   NACKs are queued (a fixed ring of `nackCapacity` sequence numbers, the oldest dropped and
///   counted when full) for the sender thread, which owns the packet history and the outbound
///   SRTP context.
/// - Receiver reports (RR, or the blocks of an SR) about our video SSRC: the latest fraction lost
///   (`WHIPPublisher.transportBacklogMs`), highest sequence and cumulative loss (the sender's
///   `RTPDeliveryMeter`), and how many arrived, for the bitrate controller.
/// - REMB (PSFB FMT 15) listing our video SSRC: the endpoint's estimate of the path, kept with
///   its arrival time (`WHIPPublisher.peerEstimatedKbps`).
/// - DTLS after the handshake goes to GnuTLS (our last flight resent when the endpoint resends its own).
///
/// The session is lost when nothing arrives for `silenceLimitNs` or consent expires; the sender
/// reads `lostReason` at each tag. Owns the ICE agent's receive side and the inbound SRTP context.
final class WHIPFeedbackReader: @unchecked Sendable {
    static let nackCapacity = 256
    /// No datagram from the endpoint for this long is a lost connection: aiortc, browsers and SFUs
    /// send receiver reports every second or so and consent checks every few seconds.
    static let silenceLimitNs: Int64 = 10_000_000_000

    private let ice: ICEAgent
    private let dtls: DTLSSRTPTransport
    private let keyframeRequester: (@Sendable () -> Void)?
    private let thread = WorkerThread(name: "bk-whip-rx")
    private let stopping = Atomic<Bool>(false)
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
    private struct NACKRing {
        var items = [UInt16](repeating: 0, count: WHIPFeedbackReader.nackCapacity)
        var head = 0
        var count = 0
        var overflowed = 0
    }
    private let nacks = Locked(NACKRing())
    private let lost = Locked<String?>(nil)
    let keyframeRequests = Atomic<Int>(0)
    let nacksReceived = Atomic<Int>(0)
    /// The video SSRC whose report blocks count (nil: no video track), and where they go.
    private let videoSSRC: UInt32?
    private let reports: WHIPReceiverReports?
    /// CLOCK_MONOTONIC ns; a test passes a faster one to run the 10 s and 30 s rules without waiting.
    private let clock: @Sendable () -> Int64

    init(ice: ICEAgent, dtls: DTLSSRTPTransport, videoSSRC: UInt32? = nil, reports: WHIPReceiverReports? = nil,
                 keyframeRequester: (@Sendable () -> Void)?, clock: @escaping @Sendable () -> Int64 = { ICEAgent.nowNs() }) {
        self.clock = clock
        self.ice = ice
        self.dtls = dtls
        self.videoSSRC = videoSSRC
        self.reports = reports
        self.keyframeRequester = keyframeRequester
    }

    deinit { buffer.deallocate() }

    func start() throws(TransportError) {
        do { try thread.start { [self] in run() } } catch { throw .connectFailed("\(error)") }
    }

    /// Stops and joins the thread (from the sender thread).
    func stop() {
        stopping.store(true, ordering: .releasing)
        thread.join()
    }

    /// Why the session is lost, once it is.
    var lostReason: String? { lost.withLock { $0 } }

    /// Calls `body` with each queued NACKed sequence number, oldest first (sender thread), and
    /// empties the queue. Returns how many were dropped because the queue was full.
    func drainNACKs(_ body: (UInt16) -> Void) -> Int {
        nacks.withLock { r -> Int in
            for i in 0..<r.count { body(r.items[(r.head + i) % Self.nackCapacity]) }
            let overflowed = r.overflowed
            r.head = 0
            r.count = 0
            r.overflowed = 0
            return overflowed
        }
    }

    private func run() {
        var lastHeard = clock()
        while !stopping.load(ordering: .acquiring) {
            var pfd = pollfd(fd: ice.fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 50)
            let now = clock()
            if ready > 0 {
                while true {
                    var from = sockaddr_in()
                    var fromLen = socklen_t(MemoryLayout<sockaddr_in>.size)
                    let n = withUnsafeMutablePointer(to: &from) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            recvfrom(ice.fd, buffer.baseAddress, 1500, Int32(MSG_DONTWAIT), $0, &fromLen)
                        }
                    }
                    guard n > 0 else { break }
                    lastHeard = clock()
                    handle(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), from: from, nowNs: lastHeard)
                }
            }
            if now - lastHeard > Self.silenceLimitNs {
                lost.withLock { $0 = "nothing heard from the endpoint for \(Self.silenceLimitNs / 1_000_000_000) s" }
                return
            }
            if !ice.keepConsent(nowNs: now) {
                lost.withLock { $0 = "the endpoint stopped answering consent checks (30 s)" }
                return
            }
        }
    }

    private func handle(_ data: UnsafeRawBufferPointer, from: sockaddr_in, nowNs: Int64) {
        if ice.handle(data, from: from, nowNs: nowNs) { return }
        // RFC 7983: 20...63 is DTLS.
        if data[0] >= 20 && data[0] <= 63 {
            dtls.feed(data)
            return
        }
        // RFC 5761: RTCP packet types 192...223 in the second byte.
        guard data.count >= 8, data[0] >= 128, data[0] <= 191, data[1] >= 192, data[1] <= 223,
              let plain = dtls.unprotectRTCP(buffer.baseAddress!, count: data.count) else { return }
        walkRTCP(UnsafeRawBufferPointer(rebasing: buffer[0..<plain]))
    }

    /// A compound RTCP packet (`RTCPFeedback`): report blocks and REMB → `WHIPReceiverReports`;
    /// PLI/FIR → keyframe request; generic NACK → queued for the sender.
    private func walkRTCP(_ b: UnsafeRawBufferPointer) {
        RTCPFeedback.walk(b, videoSSRC: videoSSRC) { item in
            switch item {
            case .reportBlock(let fraction, let highest, let cumulativeLost):
                reports?.noteBlock(fractionLost: fraction, highest: highest, cumulativeLost: cumulativeLost)
            case .estimate(let bps):
                reports?.noteEstimate(bitsPerSecond: bps, nowNs: ICEAgent.nowNs())
            case .keyframeRequest:
                keyframeRequests.add(1, ordering: .relaxed)
                keyframeRequester?()
            case .nack(let sequence):
                nacks.withLock { push(&$0, sequence) }
            }
        }
    }

    private func push(_ r: inout NACKRing, _ seq: UInt16) {
        nacksReceived.add(1, ordering: .relaxed)
        if r.count == Self.nackCapacity {
            r.head = (r.head + 1) % Self.nackCapacity
            r.count -= 1
            r.overflowed += 1
        }
        r.items[(r.head + r.count) % Self.nackCapacity] = seq
        r.count += 1
    }
}
