import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// What we need from a WHIP endpoint's SDP answer: its ICE credentials and candidates, its DTLS
/// fingerprint and role, and the payload types it accepted. Bounded: the answer is read into a
/// 64 kB buffer (`WHIPHTTPClient.maxResponseBytes`) and at most `maxCandidates` are kept.
package struct SDPAnswer: Equatable {
    package struct Candidate: Equatable {
        package var address: String
        package var port: Int
        package var priority: UInt32
    }

    package static let maxCandidates = 16

    package var iceUfrag = ""
    package var icePwd = ""
    /// "AB:CD:…" (SHA-256), upper case.
    package var fingerprint = ""
    /// `a=setup:active`: the endpoint is the DTLS client (we serve); passive: we are the client.
    var endpointIsDTLSClient = false
    var iceLite = false
    package var candidates: [Candidate] = []
    package var opusPayloadType: Int?
    package var h264PayloadType: Int?
    /// The abs-send-time extension id the endpoint accepted on video (nil: do not send it).
    package var absSendTimeID: Int?

    package init(parsing text: String) throws(TransportError) {
        var kind = ""
        var rejected = false
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = Substring(raw)
            if line.hasPrefix("m=") {
                let f = line.dropFirst(2).split(separator: " ")
                kind = f.first.map(String.init) ?? ""
                rejected = f.count > 1 && f[1] == "0"
                continue
            }
            guard line.hasPrefix("a=") else { continue }
            let a = line.dropFirst(2)
            if a == "ice-lite" { iceLite = true }
            else if a.hasPrefix("ice-ufrag:"), iceUfrag.isEmpty { iceUfrag = String(a.dropFirst(10)) }
            else if a.hasPrefix("ice-pwd:"), icePwd.isEmpty { icePwd = String(a.dropFirst(8)) }
            else if a.hasPrefix("fingerprint:"), fingerprint.isEmpty {
                let f = a.dropFirst(12).split(separator: " ")
                if f.count == 2, f[0].lowercased() == "sha-256", Self.isFingerprint(f[1]) { fingerprint = f[1].uppercased() }
            } else if a.hasPrefix("setup:") {
                endpointIsDTLSClient = a.dropFirst(6) == "active"
            } else if a.hasPrefix("candidate:"), candidates.count < Self.maxCandidates {
                // foundation component transport priority address port typ type
                let f = a.dropFirst(10).split(separator: " ")
                guard f.count >= 8, f[2].lowercased() == "udp", f[1] == "1", let port = Int(f[5]), (1...65535).contains(port),
                      let priority = UInt32(f[3]) else { continue }
                let c = Candidate(address: String(f[4]), port: port, priority: priority)
                if !candidates.contains(c) { candidates.append(c) }
            } else if a.hasPrefix("extmap:"), kind == "video", !rejected, absSendTimeID == nil {
                // extmap:<id>[/direction] <uri>; one-byte headers carry ids 1...14.
                let f = a.dropFirst(7).split(separator: " ")
                if f.count >= 2, f[1] == AbsSendTime.uri, let id = Int(f[0].split(separator: "/")[0]), (1...14).contains(id) {
                    absSendTimeID = id
                }
            } else if a.hasPrefix("rtpmap:"), !rejected {
                let f = a.dropFirst(7).split(separator: " ")
                // A payload type is 7 bits (RFC 3550): anything else is not one.
                guard f.count == 2, let pt = Int(f[0]), (0...127).contains(pt) else { continue }
                let codec = f[1].lowercased()
                if kind == "audio", codec.hasPrefix("opus/48000"), opusPayloadType == nil { opusPayloadType = pt }
                if kind == "video", codec.hasPrefix("h264/90000"), h264PayloadType == nil { h264PayloadType = pt }
            }
        }
        guard !iceUfrag.isEmpty, !icePwd.isEmpty else { throw .connectFailed("the WHIP answer has no ICE credentials") }
        guard fingerprint.count == 95 else { throw .connectFailed("the WHIP answer has no sha-256 DTLS fingerprint") }
        guard !candidates.isEmpty else { throw .connectFailed("the WHIP answer has no UDP candidate") }
        candidates.sort { $0.priority > $1.priority }
    }

    /// 32 hex pairs joined by colons: a SHA-256 fingerprint (RFC 8122), nothing else.
    static func isFingerprint(_ f: Substring) -> Bool {
        guard f.utf8.count == 95 else { return false }
        for (i, c) in f.utf8.enumerated() {
            let hex = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
            guard i % 3 == 2 ? c == 0x3A : hex else { return false }
        }
        return true
    }
}
