import Testing
@testable import BroadcastWHIP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

@Suite("WHIP SDP", .timeLimit(.minutes(1)))
struct SDPAnswerTests {
    static let fp = (0..<32).map { _ in "AB" }.joined(separator: ":")

    @Test func parsesAnAnswer() throws {
        let sdp = """
        v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0 1\r\n\
        m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=ice-ufrag:uf\r\na=ice-pwd:pw0123456789012345678901\r\n\
        a=fingerprint:sha-256 \(Self.fp.lowercased())\r\na=setup:active\r\na=rtpmap:111 opus/48000/2\r\n\
        a=candidate:1 1 udp 100 10.0.0.1 5000 typ host\r\na=candidate:2 1 udp 200 10.0.0.2 5001 typ host\r\n\
        a=candidate:3 1 tcp 300 10.0.0.3 5002 typ host\r\n\
        m=video 9 UDP/TLS/RTP/SAVPF 97\r\na=rtpmap:97 H264/90000\r\n
        """
        let a = try SDPAnswer(parsing: sdp)
        #expect(a.iceUfrag == "uf" && a.icePwd == "pw0123456789012345678901")
        #expect(a.fingerprint == Self.fp && a.endpointIsDTLSClient)
        #expect(a.opusPayloadType == 111 && a.h264PayloadType == 97)
        #expect(a.candidates.map(\.address) == ["10.0.0.2", "10.0.0.1"], "UDP only, by priority")
    }

    @Test func refusesAnAnswerWithoutCredentials() {
        #expect(throws: TransportError.self) { try SDPAnswer(parsing: "v=0\r\nm=video 9 x 96\r\n") }
    }

    /// `bk-libfuzz whip-sdp`'s finding (reproducer `oracle-fingerprint-not-hex`): any 95 characters
    /// passed as the fingerprint, NUL bytes and non-hex included; a payload type of any size was
    /// kept (and cut to 7 bits when sent).
    @Test func aFingerprintIsHexPairsAndAPayloadTypeSevenBits() throws {
        let head = "v=0\r\na=ice-ufrag:uf\r\na=ice-pwd:pw\r\na=candidate:1 1 udp 100 10.0.0.1 5000 typ host\r\n"
        let video = "m=video 9 UDP/TLS/RTP/SAVPF 96\r\n"
        var bad = Array(Self.fp)
        bad[4] = "\0"
        for fp in [String(bad), "ZZ" + Self.fp.dropFirst(2), String(Self.fp.map { $0 == ":" ? "-" : $0 }), Self.fp + ":AB"] {
            #expect(throws: TransportError.connectFailed("the WHIP answer has no sha-256 DTLS fingerprint")) {
                try SDPAnswer(parsing: head + "a=fingerprint:sha-256 \(fp)\r\n" + video + "a=rtpmap:96 H264/90000\r\n")
            }
        }
        let a = try SDPAnswer(parsing: head + "a=fingerprint:sha-256 \(Self.fp)\r\n" + video
                              + "a=rtpmap:352 H264/90000\r\na=rtpmap:-1 H264/90000\r\na=rtpmap:127 H264/90000\r\n")
        #expect(a.h264PayloadType == 127, "352 and -1 are not payload types")
    }

    @Test func offerNamesBothCodecsAndOurTransport() {
        let o = SDPOffer(iceUfrag: "U", icePwd: "P", fingerprint: Self.fp, candidates: [("192.0.2.1", 4000)],
                         audioSSRC: 1, videoSSRC: 2, sessionID: 7).text
        #expect(o.contains("a=rtpmap:111 opus/48000/2\r\n"))
        #expect(o.contains("packetization-mode=1;profile-level-id=42e01f"))
        #expect(o.contains("a=setup:actpass\r\n") && o.contains("a=group:BUNDLE 0 1\r\n"))
        #expect(o.contains("a=candidate:1 1 udp ") && o.contains(" 192.0.2.1 4000 typ host\r\n"))
        #expect(o.contains("a=fingerprint:sha-256 \(Self.fp)\r\n"))
    }
}
