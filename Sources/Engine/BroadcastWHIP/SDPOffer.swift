import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// The SDP offer a WHIP client POSTs: one BUNDLEd transport (one ufrag/pwd/fingerprint, rtcp-mux),
/// sendonly Opus 48 kHz stereo and H.264 constrained baseline with packetization-mode 1, our host
/// candidates inline (no trickle), abs-send-time and goog-remb on video, and `a=setup:actpass` (the endpoint picks the DTLS role).
struct SDPOffer {
    static let opusPayloadType = 111
    static let h264PayloadType = 96

    var iceUfrag: String
    var icePwd: String
    var fingerprint: String
    var candidates: [(address: String, port: Int)]
    var audioSSRC: UInt32?
    var videoSSRC: UInt32?
    var sessionID: UInt64

    var text: String {
        var mids: [String] = []
        if audioSSRC != nil { mids.append("0") }
        if videoSSRC != nil { mids.append("1") }
        var s = "v=0\r\no=- \(sessionID) 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
        s += "a=group:BUNDLE \(mids.joined(separator: " "))\r\na=msid-semantic: WMS broadcast\r\n"
        if let ssrc = audioSSRC {
            s += "m=audio 9 UDP/TLS/RTP/SAVPF \(Self.opusPayloadType)\r\n" + transport(mid: "0")
            s += "a=rtpmap:\(Self.opusPayloadType) opus/48000/2\r\n"
            s += "a=fmtp:\(Self.opusPayloadType) minptime=10;useinbandfec=1;stereo=1;sprop-stereo=1\r\n"
            s += "a=ssrc:\(ssrc) cname:broadcast\r\na=ssrc:\(ssrc) msid:broadcast audio\r\n"
        }
        if let ssrc = videoSSRC {
            let pt = Self.h264PayloadType
            s += "m=video 9 UDP/TLS/RTP/SAVPF \(pt)\r\n" + transport(mid: "1")
            s += "a=rtpmap:\(pt) H264/90000\r\na=rtcp-fb:\(pt) nack\r\na=rtcp-fb:\(pt) nack pli\r\na=rtcp-fb:\(pt) ccm fir\r\n"
            // abs-send-time lets the endpoint estimate the path and answer with REMB.
            s += "a=rtcp-fb:\(pt) goog-remb\r\na=extmap:\(AbsSendTime.offeredID) \(AbsSendTime.uri)\r\n"
            s += "a=fmtp:\(pt) level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n"
            s += "a=ssrc:\(ssrc) cname:broadcast\r\na=ssrc:\(ssrc) msid:broadcast video\r\n"
        }
        return s
    }

    private func transport(mid: String) -> String {
        var s = "c=IN IP4 0.0.0.0\r\na=rtcp:9 IN IP4 0.0.0.0\r\n"
        s += "a=ice-ufrag:\(iceUfrag)\r\na=ice-pwd:\(icePwd)\r\n"
        s += "a=fingerprint:sha-256 \(fingerprint)\r\na=setup:actpass\r\na=mid:\(mid)\r\na=sendonly\r\na=rtcp-mux\r\n"
        for (i, c) in candidates.enumerated() {
            // host type preference 126, local preference by order, component 1 (RFC 8445 §5.1.2).
            let priority = (126 << 24) | ((65535 - i) << 8) | 255
            s += "a=candidate:\(i + 1) 1 udp \(priority) \(c.address) \(c.port) typ host\r\n"
        }
        s += "a=end-of-candidates\r\n"
        return s
    }
}
