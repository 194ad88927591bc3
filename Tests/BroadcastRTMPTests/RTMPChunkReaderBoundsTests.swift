import Testing
@testable import BroadcastRTMP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

/// Issue 22: what a hostile server can make the reader hold is bounded (64 chunk streams, 64 KB
/// per message, 128 KB of unfinished messages, a fixed input buffer), and reassembly stays
/// correct when the arena has to be compacted.
@Suite(.timeLimit(.minutes(1))) struct RTMPChunkReaderBoundsTests {
    /// A type-0 header on chunk stream `csid` (3-byte basic header) announcing `length` bytes of type 20.
    static func open(_ csid: Int, length: Int) -> [UInt8] {
        let id = csid - 64
        return [0x01, UInt8(id & 0xFF), UInt8(id >> 8), 0, 0, 0,
                UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), 20, 0, 0, 0, 0]
    }

    /// A type-3 continuation on `csid` with `bytes`.
    static func more(_ csid: Int, _ bytes: [UInt8]) -> [UInt8] {
        let id = csid - 64
        return [0xC1, UInt8(id & 0xFF), UInt8(id >> 8)] + bytes
    }

    static func setChunkSize(_ n: UInt32) -> [UInt8] {
        [0x02, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
    }

    @Test func theSixtyFifthChunkStreamIsAProtocolError() throws {
        let reader = RTMPChunkReader()
        reader.append(Self.setChunkSize(1))
        _ = try reader.next()
        for i in 0..<(RTMPChunkReader.maxChunkStreams - 1) { // stream 2 (control) is the first
            reader.append(Self.open(64 + i, length: 1000) + [7])
            #expect(try reader.next() == nil)
        }
        reader.append(Self.open(64 + 999, length: 1000) + [7])
        #expect(throws: RTMPProtocolError.tooManyChunkStreams(64)) { _ = try reader.next() }
    }

    @Test func unfinishedMessagesAreBoundedTogether() throws {
        let reader = RTMPChunkReader()
        reader.append(Self.setChunkSize(1))
        _ = try reader.next()
        let big = RTMPChunkReader.maxMessageLength
        for i in 0..<(RTMPChunkReader.maxReassemblyBytes / big) {
            reader.append(Self.open(64 + i, length: big) + [1])
            #expect(try reader.next() == nil)
        }
        reader.append(Self.open(200, length: 1) + [1])
        #expect(throws: RTMPProtocolError.tooMuchReassembly(RTMPChunkReader.maxReassemblyBytes)) { _ = try reader.next() }
        let tooLong = RTMPChunkReader()
        tooLong.append(Self.open(64, length: big + 1) + [1])
        #expect(throws: RTMPProtocolError.messageTooLarge(big + 1)) { _ = try tooLong.next() }
    }

    @Test func moreUnreadInputThanTheBufferIsAProtocolError() {
        let reader = RTMPChunkReader()
        reader.append([UInt8](repeating: 0x03, count: RTMPChunkReader.inputCapacity + 1))
        #expect(throws: RTMPProtocolError.inputOverflow(RTMPChunkReader.inputCapacity)) { _ = try reader.next() }
    }

    /// Messages of the largest size fill the arena; the first finishes, a new one starts in the
    /// space it leaves (the arena is compacted), and every payload still comes out intact.
    @Test func compactionKeepsEveryPayloadIntact() throws {
        let reader = RTMPChunkReader()
        let size = RTMPChunkReader.maxMessageLength
        let filling = RTMPChunkReader.maxReassemblyBytes / size
        #expect(filling >= 2)
        reader.append(Self.setChunkSize(UInt32(size / 2)))
        _ = try reader.next()
        func payload(_ i: Int) -> [UInt8] { (0..<size).map { UInt8(truncatingIfNeeded: $0 * 7 + i) } }
        for i in 0..<filling {
            reader.append(Self.open(64 + i, length: size) + payload(i)[0..<(size / 2)])
            #expect(try reader.next() == nil)
        }
        reader.append(Self.more(64, Array(payload(0)[(size / 2)...])))
        #expect(try reader.next()?.payload == payload(0))
        reader.append(Self.open(70, length: size) + payload(9)[0..<(size / 2)])
        #expect(try reader.next() == nil)
        for i in 1..<filling {
            reader.append(Self.more(64 + i, Array(payload(i)[(size / 2)...])))
            #expect(try reader.next()?.payload == payload(i))
        }
        reader.append(Self.more(70, Array(payload(9)[(size / 2)...])))
        #expect(try reader.next()?.payload == payload(9))
    }
}

/// The one failure classifier: only the server's answer is a refusal.
@Suite(.timeLimit(.minutes(1))) struct RTMPFailureClassifierTests {
    func classify(_ cause: RTMPFailureCause, _ stage: RTMPStage, stopped: Bool = false) -> TransportError {
        RTMPFailureClassifier.classify(cause, stage: stage, stoppedByUs: stopped, name: "rtmp://h/live/****", timeoutSeconds: 5)
    }

    @Test func aHangUpIsARefusalOnlyInAnswerToConnectOrPublish() {
        #expect(classify(.receive(.closed), .awaitingPublish).isRefusal)
        #expect(classify(.receive(.closed), .awaitingConnect).isRefusal)
        #expect(!classify(.receive(.closed), .handshaking).isRefusal)
        #expect(!classify(.receive(.closed), .creatingStream).isRefusal)
        #expect(!classify(.receive(.closed), .streaming).isRefusal)
    }

    /// Issue 22 defect 3: a stop that cut a reconnect waiting for publish was "key rejected".
    @Test func ourOwnStopIsNeverARefusal() {
        for stage in [RTMPStage.handshaking, .awaitingConnect, .creatingStream, .awaitingPublish, .streaming] {
            for cause in [RTMPFailureCause.receive(.closed), .send(.closed), .refused(what: "x", code: "NetStream.Publish.Rejected")] {
                #expect(!classify(cause, stage, stopped: true).isRefusal, "\(stage) \(cause)")
            }
        }
    }

    @Test func whatTheServerSaidIsARefusalExceptAStaleName() {
        #expect(classify(.refused(what: "server refused publish", code: "NetStream.Publish.Rejected"), .awaitingPublish).isRefusal)
        if case .streamNameInUse = classify(.refused(what: "x", code: "NetStream.Publish.BadName"), .awaitingPublish) {} else {
            Issue.record("BadName is our stale session, retried")
        }
    }

    @Test func midStreamFailuresAreNotLabelledCouldNotConnect() {
        let protocolError = classify(.protocolError(.tooManyChunkStreams(64)), .streaming)
        #expect(protocolError == .connectionLost("rtmp://h/live/****: protocol error from server: server opened more than 64 chunk streams"))
        #expect(!protocolError.description.contains("could not connect"))
        #expect(classify(.protocolError(.tooManyChunkStreams(64)), .awaitingConnect).description.hasPrefix("could not connect"))
        if case .writeFailed = classify(.send(.timedOut), .streaming) {} else { Issue.record("a send that stalls is a write failure") }
        if case .connectionLost = classify(.refused(what: "x", code: "NetStream.Publish.Rejected"), .streaming) {} else {
            Issue.record("an error status mid-stream ends the stream: reconnect")
        }
    }
}
