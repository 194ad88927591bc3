import CSRTPShim
import Glibc
import Synchronization
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// A `PacketSink` that publishes to a WHIP endpoint (RFC 9725): H.264 and Opus over SRTP from the same
/// encode as every other destination.
///
/// `open` POSTs the SDP offer (`SDPOffer`) with `$STREAM_KEY` as the bearer token, reads the 201
/// answer (`SDPAnswer`) and its `Location`, runs ICE as the controlling agent (`ICEAgent`) and the
/// DTLS-SRTP handshake (`DTLSSRTPTransport`, the peer's certificate checked against the answer).
/// `write` turns each FLV tag into RTP at once (`H264RTPPacketizer`, SPS/PPS before each IDR;
/// one Opus packet per RTP packet, RFC 7587), sends sender reports once a second per stream
/// (`RTCPSenderReport`), answers the endpoint's STUN checks, PLI/FIR (a keyframe request) and NACK
/// (a retransmission from `RTPPacketHistory`). `close` DELETEs the resource.
///
/// 401/403 are refusals (exit 3, never retried); other failures are `connectFailed` (exit 3 at
/// start, reconnect with backoff after a loss, as for RTMP).
package final class WHIPPublisher: PacketSink, LinkFeedback, KeyframeRequesting, @unchecked Sendable {
    package let displayName: String
    /// RTP is real time: receivers play each packet out by its arrival (a jitter buffer of a few
    /// frames), so block mode paces sends to media time as for SRT; and each track is its own RTP
    /// stream, timed on its own, so tags come without the interleaver's wait.
    package var capabilities: DestinationCapabilities {
        DestinationCapabilities(isNetworkPublisher: true, stage: .encoded, needsRealTimeInput: true)
    }
    /// The NACK history, the delivery meter's ring, the packet buffers and the signalling response
    /// buffer (while open), and the libraries' pages once per process.
    package var memoryPlanLines: [MemoryPlan.Line] {
        let label = "WHIP (buffers, TLS/SRTP libs)"
        return [MemoryPlan.Line(key: "whip_buffers", label: label, bytes: Self.bufferBytes),
                MemoryPlan.Line(key: "whip_buffers", label: label, bytes: Self.libraryBytes, once: true)]
    }
    private let url: WHIPURL
    private let urlError: String?
    private let token: String
    private let hasVideo: Bool
    private let hasAudio: Bool
    private let connectTimeoutSeconds: Int
    private let http: WHIPHTTPClient
    /// Called (from the sender thread) when the endpoint asks for a keyframe (PLI/FIR).
    package var keyframeRequester: (@Sendable () -> Void)?

    private var ice: ICEAgent?
    private var dtls: DTLSSRTPTransport?
    private var resource: WHIPURL?
    /// The abs-send-time extension id the answer accepted for video (nil: none on our packets).
    private var absSendTimeID: Int?
    private var video = RTPStream(ssrc: UInt32.random(in: 1...UInt32.max), payloadType: UInt8(SDPOffer.h264PayloadType), clockRate: 90_000)
    private var audio = RTPStream(ssrc: UInt32.random(in: 1...UInt32.max), payloadType: UInt8(SDPOffer.opusPayloadType), clockRate: 48_000)
    private let history = RTPPacketHistory()
    /// One packet being built, plus room for the SRTP trailer.
    private let packet = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500 + Int(BK_SRTP_MAX_TRAILER), alignment: 16)
    private let incoming = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500 + Int(BK_SRTP_MAX_TRAILER), alignment: 16)
    /// The latest SPS and PPS (from the avcC sequence header), sent before each IDR.
    private let sps = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 1)
    private let pps = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 1)
    private var spsCount = 0, ppsCount = 0
    /// The session's `bk-whip-rx` thread: STUN, SRTCP feedback, DTLS after the handshake.
    private var reader: WHIPFeedbackReader?
    private let aborted = Atomic<Bool>(false)
    private let httpSocket = Atomic<Int32>(-1)

    /// RTP payload bytes per packet: 1200-byte packets before SRTP stay under any path MTU.
    static let maxPayload = 1200 - 12

    /// Counters for stats and tests.
    private(set) var packetsSent = 0
    private(set) var sendFailures = 0
    private(set) var retransmitted = 0
    private(set) var malformedUnits = 0
    /// Packets NACKed that the history no longer held.
    private(set) var unanswerableNACKs = 0
    /// NACKs for a packet resent within `RTPPacketHistory.resendGuardNs` (not answered again).
    private(set) var repeatedNACKs = 0
    /// Repairs not sent: the repair budget was spent (the packet stays lost; counted as dropped).
    private(set) var repairsOverBudget = 0
    /// Repair bytes the path may still take: each first transmission adds `repairSharePercent` of
    /// its bytes, up to `repairBurstBytes`. Repairs beyond it would crowd a congested path with
    /// more than the media it lost, and the loss would feed itself.
    private var repairCredit = WHIPPublisher.repairBurstBytes
    static let repairSharePercent = 20
    static let repairBurstBytes = 96_000
    /// The counters above as link stats, published by the sender thread for the housekeeper.
    private let link = Locked<TransportLinkStats?>(nil)
    /// RTP payload bytes sent (first transmissions), for the loss share below. Any thread reads.
    private let wireBytes = Atomic<Int>(0)
    private struct LossShare { var bytes = -1, undelivered = 0 }
    private let lossShare = Locked(LossShare())
    private let receiverReports = WHIPReceiverReports()
    /// What the endpoint received over each report's span (the sender thread's).
    private let meter = RTPDeliveryMeter()
    /// Report blocks the meter has seen (`WHIPReceiverReports.count`).
    private var reportsTaken = 0
    package var linkStats: TransportLinkStats? { link.withLock { $0 } }

    /// The endpoint's latest REMB for our video in kbit/s (its delay-based estimate of the path, fed
    /// by our abs-send-time); nil before the first and when none arrived for 5 s. Any thread reads.
    package var peerEstimatedKbps: Int? { receiverReports.estimateKbps(nowNs: ICEAgent.nowNs()) }
    /// REMB packets taken from the endpoint so far (tests).
    var estimatesReceived: Int { receiverReports.estimates.load(ordering: .relaxed) }
    /// What the endpoint's receiver reports say arrived, over the span the latest covers
    /// (`RTPDeliveryMeter`); nil before two reports and when none was measured for 3 s.
    package var deliveredKbps: Int? { receiverReports.deliveredKbps(nowNs: ICEAgent.nowNs()) }

    package init(url text: String, token: String, hasVideo: Bool, hasAudio: Bool, connectTimeoutSeconds: Int, caFile: String?) {
        var parsed = WHIPURL(invalid: ())
        var problem: String?
        do { parsed = try WHIPURL(parsing: text) } catch { problem = "\(error)" }
        url = parsed
        urlError = problem
        displayName = problem == nil ? parsed.redacted : "whip (invalid URL)"
        self.token = token
        self.hasVideo = hasVideo
        self.hasAudio = hasAudio
        self.connectTimeoutSeconds = max(1, connectTimeoutSeconds)
        http = WHIPHTTPClient(timeoutSeconds: self.connectTimeoutSeconds, caFile: caFile)
    }

    deinit {
        close()
        packet.deallocate()
        incoming.deallocate()
        sps.deallocate()
        pps.deallocate()
    }

    package var kind: TagSinkKind { .whip }

    /// Loss stands in for a queue: RTP over UDP never backs up in a send buffer, so congestion
    /// shows as the fraction lost in the endpoint's receiver reports about our video. As in
    /// Google's congestion control's loss rule: more than 10% lost reads as congested (past the
    /// bitrate controller's 300 ms), 2-10% holds the rate (neither congested nor calm), under 2%
    /// is calm. Nothing is congested before the first report.
    package var transportBacklogMs: Int {
        guard receiverReports.count.load(ordering: .acquiring) > 0 else { return 0 }
        let lost = receiverReports.fractionLost.load(ordering: .relaxed)  // x/256
        return lost > 25 ? 600 : lost >= 5 ? 200 : 0
    }

    /// Three quarters of the share of the RTP bytes sent that the receiver reports lost: what was
    /// sent since the last call, at the latest report's fraction. The bitrate controller subtracts
    /// the growth from what was handed over in the seconds it has no measured rate for (before
    /// the second report, and when calm). While congested it takes `deliveredKbps` instead: a
    /// report's fraction describes packets sent at an earlier, higher rate, and counted against
    /// each later second it compounded the cuts into the floor (312 kbps through a 1200 kbit/s
    /// link in CI).
    package var undeliveredBytes: Int {
        let reported = receiverReports.count.load(ordering: .acquiring) > 0
        let fraction = receiverReports.fractionLost.load(ordering: .relaxed)
        let bytes = wireBytes.load(ordering: .relaxed)
        return lossShare.withLock { l in
            if reported && l.bytes >= 0 && bytes > l.bytes { l.undelivered += (bytes - l.bytes) * fraction * 3 / 1024 }
            l.bytes = bytes
            return l.undelivered
        }
    }

    package func open() throws(TransportError) {
        do {
            try connect()
        } catch let e as TransportError {
            throw e
        } catch {
            throw .connectFailed("\(displayName): \(error)")
        }
    }

    /// Offer, answer, ICE and DTLS-SRTP; the feedback reader once connected.
    private func connect() throws {
        close()
        aborted.store(false, ordering: .releasing)
        if let urlError { throw TransportError.connectFailed(urlError) }
        let agent = try ICEAgent()
        let keys = try DTLSSRTPTransport()
        let offer = SDPOffer(iceUfrag: agent.localUfrag, icePwd: agent.localPwd, fingerprint: keys.fingerprint,
                             candidates: ICEAgent.hostAddresses().map { ($0, Int(agent.port)) },
                             audioSSRC: hasAudio ? audio.ssrc : nil, videoSSRC: hasVideo ? video.ssrc : nil,
                             sessionID: UInt64.random(in: 1...UInt64(Int64.max)))
        let (response, answeredBy) = try http.requestFollowingRedirects(
            "POST", url, token: token, contentType: "application/sdp", body: offer.text,
            displayName: displayName) { self.httpSocket.store($0, ordering: .releasing) }
        switch response.status {
        case 201, 200: break
        case 401, 403:
            throw TransportError.publishRejected("\(displayName): the WHIP endpoint answered \(response.status) (token refused)")
        default:
            throw TransportError.connectFailed("\(displayName): the WHIP endpoint answered HTTP \(response.status)")
        }
        resource = response.location.flatMap { answeredBy.resource($0) }
        do {
            let answer = try SDPAnswer(parsing: response.body)
            if hasVideo {
                guard let pt = answer.h264PayloadType else {
                    throw TransportError.connectFailed("\(displayName): the WHIP endpoint refused the offer: its answer accepts no H.264 video")
                }
                video.payloadType = UInt8(pt & 0x7F)
            }
            if hasAudio {
                guard let pt = answer.opusPayloadType else {
                    throw TransportError.connectFailed("\(displayName): the WHIP endpoint refused the offer: its answer accepts no Opus audio")
                }
                audio.payloadType = UInt8(pt & 0x7F)
            }
            absSendTimeID = answer.absSendTimeID
            // ICE and DTLS are one operation with one deadline from the answer, woken by the stop.
            let deadline = Deadline.after(seconds: connectTimeoutSeconds)
            try agent.connect(answer: answer, timeoutMs: Int(deadline.remainingMs())) {
                aborted.load(ordering: .acquiring) || http.stop?.isSet == true
            }
            try keys.handshake(ice: agent, asClient: !answer.endpointIsDTLSClient, expectedFingerprint: answer.fingerprint,
                               deadline: deadline, stop: http.stop, displayName: displayName)
        } catch {
            deleteResource()
            throw error
        }
        ice = agent
        dtls = keys
        history.reset()
        receiverReports.reset()
        meter.reset()
        reportsTaken = 0
        repairCredit = Self.repairBurstBytes
        lossShare.withLock { $0 = LossShare(undelivered: $0.undelivered) }
        let r = WHIPFeedbackReader(ice: agent, dtls: keys, videoSSRC: hasVideo ? video.ssrc : nil, reports: receiverReports,
                                   keyframeRequester: keyframeRequester)
        do { try r.start() } catch {
            deleteResource()
            throw error
        }
        reader = r
    }

    /// Packetizes one packet into RTP over SRTP: H.264 per RFC 6184, Opus per RFC 7587; a codec
    /// configuration keeps the parameter sets that go before each IDR.
    package func write(_ packet: EncodedPacket) throws(TransportError) {
        guard ice != nil, dtls != nil, let reader else { throw TransportError.writeFailed("\(displayName): not connected") }
        if let why = reader.lostReason { throw TransportError.connectionLost("\(displayName): \(why)") }
        unanswerableNACKs += reader.drainNACKs { retransmit($0) }
        let now = ICEAgent.nowNs()
        takeReport(now)
        let payload = packet.data
        let ms = UInt32(truncatingIfNeeded: packet.timestampMs)
        switch packet.codec {
        case .h264 where hasVideo && !payload.isEmpty:
            if packet.isConfig {
                storeParameterSets(payload)
            } else {
                sendAccessUnit(payload, keyframe: packet.isKeyframe,
                               timestamp: video.timestamp(ms: ms, compositionMs: packet.compositionOffsetMs),
                               captureNs: packet.captureNs)
            }
        case .opus where hasAudio && !payload.isEmpty && !packet.isConfig:
            let ts = audio.timestamp(ms: ms)
            sendPacket(&audio, timestamp: ts, marker: false, header: (0, 0), headerCount: 0, payload: payload, keep: false)
            audio.lastTimestamp = ts
            audio.lastCaptureNs = packet.captureNs
        default:
            break
        }
        sendReports(now)
    }

    /// A new receiver report about our video: what arrived over its span (nothing allocates).
    private func takeReport(_ now: Int64) {
        let n = receiverReports.count.load(ordering: .acquiring)
        guard n != reportsTaken else { return }
        reportsTaken = n
        let block = receiverReports.latestBlock.withLock { $0 }
        if let kbps = meter.take(highest: block.highest, cumulativeLost: block.cumulativeLost) {
            receiverReports.noteDelivered(kbps: kbps, nowNs: now)
        }
    }

    private func publishLinkStats() {
        let estimate = Double(peerEstimatedKbps ?? 0) / 1000
        let now = TransportLinkStats(rttMs: 0, bandwidthMbps: estimate, sendRateMbps: 0, packetsSent: packetsSent,
                                     packetsLost: reader?.nacksReceived.load(ordering: .relaxed) ?? 0,
                                     packetsRetransmitted: retransmitted,
                                     packetsDropped: sendFailures + unanswerableNACKs + repairsOverBudget, sendBufferMs: 0)
        link.withLock { $0 = now }
    }

    private func storeParameterSets(_ avcC: UnsafeRawBufferPointer) {
        guard avcC.count >= 7 else { return }
        var at = 5
        let spsN = Int(avcC[at] & 0x1F)
        at += 1
        for i in 0..<spsN {
            guard at + 2 <= avcC.count else { return }
            let n = Int(avcC.loadBE16(at))
            guard at + 2 + n <= avcC.count else { return }
            if i == 0, n <= sps.count {
                sps.copyMemory(from: UnsafeRawBufferPointer(rebasing: avcC[(at + 2)..<(at + 2 + n)]))
                spsCount = n
            }
            at += 2 + n
        }
        guard at < avcC.count else { return }
        let ppsN = Int(avcC[at])
        at += 1
        for i in 0..<ppsN {
            guard at + 2 <= avcC.count else { return }
            let n = Int(avcC.loadBE16(at))
            guard at + 2 + n <= avcC.count else { return }
            if i == 0, n <= pps.count {
                pps.copyMemory(from: UnsafeRawBufferPointer(rebasing: avcC[(at + 2)..<(at + 2 + n)]))
                ppsCount = n
            }
            at += 2 + n
        }
    }

    private func sendAccessUnit(_ avcc: UnsafeRawBufferPointer, keyframe: Bool, timestamp: UInt32, captureNs: Int64) {
        if keyframe && spsCount > 0 && ppsCount > 0 {
            var hasSets = false
            H264RTPPacketizer.forEachNAL(avcc) { nal, _ in if nal[0] & 0x1F == 7 { hasSets = true } }
            if !hasSets {
                sendNAL(UnsafeRawBufferPointer(rebasing: sps[0..<spsCount]), timestamp: timestamp, last: false)
                sendNAL(UnsafeRawBufferPointer(rebasing: pps[0..<ppsCount]), timestamp: timestamp, last: false)
            }
        }
        let whole = H264RTPPacketizer.forEachNAL(avcc) { nal, last in
            // Access unit delimiters carry nothing RTP needs.
            if nal[0] & 0x1F == 9 && !last { return }
            sendNAL(nal, timestamp: timestamp, last: last)
        }
        if !whole { malformedUnits += 1 }
        video.lastTimestamp = timestamp
        video.lastCaptureNs = captureNs
    }

    private func sendNAL(_ nal: UnsafeRawBufferPointer, timestamp: UInt32, last: Bool) {
        H264RTPPacketizer.packetize(nal, maxPayload: Self.maxPayload, lastOfAccessUnit: last) { f in
            sendPacket(&video, timestamp: timestamp, marker: f.marker, header: f.header, headerCount: f.headerCount,
                       payload: f.payload, keep: true, extensionID: absSendTimeID)
        }
    }

    private func sendPacket(_ stream: inout RTPStream, timestamp: UInt32, marker: Bool, header: (UInt8, UInt8), headerCount: Int,
                            payload: UnsafeRawBufferPointer, keep: Bool, extensionID: Int? = nil) {
        let top = extensionID == nil ? 12 : 12 + AbsSendTime.extensionBytes
        guard let ice, let dtls, top + headerCount + payload.count <= 1500 else { return }
        let sequence = stream.sequence
        stream.writeHeader(packet, timestamp: timestamp, marker: marker, hasExtension: extensionID != nil)
        if let extensionID { AbsSendTime.write(packet, id: extensionID, ns: ICEAgent.nowNs()) }
        if headerCount > 0 { packet[top] = header.0 }
        if headerCount > 1 { packet[top + 1] = header.1 }
        UnsafeMutableRawBufferPointer(rebasing: packet[(top + headerCount)...]).copyMemory(from: payload)
        let plain = top + headerCount + payload.count
        if keep { history.store(sequence: sequence, UnsafeRawBufferPointer(rebasing: packet[0..<plain])) }
        stream.packets &+= 1
        stream.octets &+= UInt32(headerCount + payload.count)
        if keep {
            meter.videoSent(sequence: sequence, bytes: headerCount + payload.count, nowNs: ICEAgent.nowNs())
        } else {
            meter.audioSent(bytes: headerCount + payload.count)
        }
        wireBytes.add(plain, ordering: .relaxed)
        repairCredit = min(Self.repairBurstBytes, repairCredit + plain * Self.repairSharePercent / 100)
        guard let n = dtls.protectRTP(packet.baseAddress!, count: plain) else {
            sendFailures += 1
            return
        }
        if ice.send(packet.baseAddress!, count: n) { packetsSent += 1 } else { sendFailures += 1 }
    }

    private func sendReports(_ now: Int64) {
        if hasAudio { sendReport(&audio, now) }
        if hasVideo { sendReport(&video, now) }
    }

    private func sendReport(_ s: inout RTPStream, _ now: Int64) {
        guard let ice, let dtls, s.packets > 0, now - s.lastReportNs >= 1_000_000_000 else { return }
        RTCPSenderReport.write(packet, stream: s)
        if let n = dtls.protectRTCP(packet.baseAddress!, count: RTCPSenderReport.size) { _ = ice.send(packet.baseAddress!, count: n) }
        s.lastReportNs = now
        publishLinkStats()
    }

    private func retransmit(_ sequence: UInt16) {
        guard history.claimResend(sequence: sequence, nowNs: ICEAgent.nowNs()) else {
            repeatedNACKs += 1
            return
        }
        guard let ice, let dtls, let plain = history.copy(sequence: sequence, into: UnsafeMutableRawBufferPointer(rebasing: packet[0..<1500])),
              plain >= 20 else {
            unanswerableNACKs += 1
            return
        }
        guard repairCredit >= plain else {
            repairsOverBudget += 1
            return
        }
        // The repair leaves now: its abs-send-time says so, or the endpoint's estimator would read
        // the NACK round trip as queueing delay.
        if packet[0] & 0x10 != 0 { AbsSendTime.update(packet, ns: ICEAgent.nowNs()) }
        guard let n = dtls.protectRTP(packet.baseAddress!, count: plain) else {
            unanswerableNACKs += 1
            return
        }
        // Twice while the budget allows: a repair lost again would stall the receiver's jitter
        // buffer until it gives up on the frame (and its dependants); the copy costs the loss
        // rate's share of the bitrate.
        repairCredit -= plain
        if ice.send(packet.baseAddress!, count: n) { retransmitted += 1 }
        if repairCredit >= plain {
            repairCredit -= plain
            _ = ice.send(packet.baseAddress!, count: n)
        }
    }

    /// How long the DELETE may take in all (connect, request, the whole answer): a stop has 2 s.
    static let deleteDeadlineMs = 500

    /// DELETEs the resource (best effort, within `deleteDeadlineMs`) and drops the transport.
    package func close() {
        reader?.stop()
        if ice != nil { publishLinkStats() }
        reader = nil
        deleteResource()
        ice = nil
        dtls = nil
    }

    private func deleteResource() {
        guard let r = resource else { return }
        resource = nil
        if aborted.load(ordering: .acquiring) { return }
        _ = try? http.request("DELETE", r, token: token, contentType: nil, body: "", displayName: displayName,
                              deadline: .after(milliseconds: Self.deleteDeadlineMs), wakesOnStop: false) {
            self.httpSocket.store($0, ordering: .releasing)
        }
    }

    /// A stop deadline passed: a signalling request in flight fails at once; ICE and DTLS give up
    /// at their next poll.
    package func abortPendingIO() {
        aborted.store(true, ordering: .releasing)
        let fd = httpSocket.load(ordering: .acquiring)
        if fd >= 0 { TCPSocket.shutdownNow(fd) }
    }

    /// One destination's buffers: the NACK history, the delivery meter's ring, the packet
    /// buffers and the signalling response buffer.
    package static let bufferBytes = RTPPacketHistory.plannedBytes + RTPDeliveryMeter.plannedBytes + 4 * 1600
        + WHIPHTTPClient.maxResponseBytes

    /// GnuTLS (+ nettle, p11-kit …), libsrtp2, the certificate and the `bk-whip-rx` stack, once per
    /// process: measured 2026-12-02 at 720p from the test source, a WHIP run's VmHWM 36.4 MB against
    /// 33.0 MB for RTMP (both Opus), less the 0.7 MB of buffers above.
    package static let libraryBytes = 2_700_000
}
