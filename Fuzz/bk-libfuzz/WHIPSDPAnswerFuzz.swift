import BroadcastKit

/// A WHIP endpoint's SDP answer (the body of its 201) through SDPAnswer(parsing:), as
/// WHIPPublisher reads it. Oracles: an accepted answer has ICE credentials, a SHA-256 fingerprint
/// of 32 hex pairs, 1...`maxCandidates` distinct UDP candidates with ports in 1...65535, sorted by
/// priority, payload types of 7 bits and an abs-send-time id in 1...14; a refusal is one of the
/// parser's fixed messages (nothing of the answer quoted).
enum WHIPSDPAnswerFuzz {
    static let fixedRefusals: Set<String> = [
        "the WHIP answer has no ICE credentials",
        "the WHIP answer has no sha-256 DTLS fingerprint",
        "the WHIP answer has no UDP candidate",
    ]

    static func run(_ data: UnsafeRawBufferPointer) {
        let text = String(decoding: data, as: UTF8.self)
        do {
            let a = try SDPAnswer(parsing: text)
            let hexOrColon = a.fingerprint.utf8.enumerated().allSatisfy { i, c in
                i % 3 == 2 ? c == 0x3A : (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46)
            }
            guard !a.iceUfrag.isEmpty, !a.icePwd.isEmpty, a.fingerprint.utf8.count == 95, hexOrColon else {
                FuzzTarget.fail("whip-sdp", "accepted an answer without usable credentials or fingerprint: \(a.fingerprint.debugDescription)")
            }
            guard (1...SDPAnswer.maxCandidates).contains(a.candidates.count),
                  a.candidates.allSatisfy({ (1...65535).contains($0.port) }),
                  zip(a.candidates, a.candidates.dropFirst()).allSatisfy({ $0.priority >= $1.priority }) else {
                FuzzTarget.fail("whip-sdp", "accepted \(a.candidates.count) candidates, unsorted or with bad ports")
            }
            for (i, c) in a.candidates.enumerated() where a.candidates[(i + 1)...].contains(c) {
                FuzzTarget.fail("whip-sdp", "candidate \(c.address):\(c.port) kept twice")
            }
            for pt in [a.opusPayloadType, a.h264PayloadType].compactMap({ $0 }) where !(0...127).contains(pt) {
                FuzzTarget.fail("whip-sdp", "payload type \(pt) is not 7 bits")
            }
            if let id = a.absSendTimeID, !(1...14).contains(id) {
                FuzzTarget.fail("whip-sdp", "abs-send-time id \(id) outside one-byte headers")
            }
        } catch {
            guard case .connectFailed(let m) = error, fixedRefusals.contains(m) else {
                FuzzTarget.fail("whip-sdp", "the refusal is not a fixed message: \("\(error)".debugDescription)")
            }
        }
    }
}
