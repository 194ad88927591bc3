import CDTLSShim
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// STUN binding messages for ICE (RFC 5389, RFC 8445 §7): written into a caller's buffer, parsed in
/// place. Short-term credentials: MESSAGE-INTEGRITY is HMAC-SHA1 keyed with the password of the
/// agent that will check it; every message ends with FINGERPRINT.
enum STUNMessage {
    static let magicCookie: UInt32 = 0x2112_A442
    static let bindingRequest: UInt16 = 0x0001
    static let bindingSuccess: UInt16 = 0x0101
    static let username: UInt16 = 0x0006
    static let messageIntegrity: UInt16 = 0x0008
    static let xorMappedAddress: UInt16 = 0x0020
    static let priority: UInt16 = 0x0024
    static let useCandidate: UInt16 = 0x0025
    static let fingerprint: UInt16 = 0x8028
    static let iceControlling: UInt16 = 0x802A

    /// RFC 7983: a first byte 0...3 is STUN.
    static func isSTUN(_ b: UnsafeRawBufferPointer) -> Bool {
        b.count >= 20 && b[0] < 4 && b.loadBE32(4) == magicCookie
    }

    /// Writes a binding request from the controlling agent. Returns its length.
    static func writeRequest(into out: UnsafeMutableRawBufferPointer, transaction: [UInt8], username user: String,
                                     password: String, priority prio: UInt32, tieBreaker: UInt64, nominate: Bool) -> Int {
        var w = Writer(out, type: bindingRequest, transaction: transaction)
        w.attribute(username, bytes: Array(user.utf8))
        w.attribute(priority, u32: prio)
        w.attribute(iceControlling, bytes: (0..<8).map { UInt8(truncatingIfNeeded: tieBreaker >> (56 - 8 * $0)) })
        if nominate { w.attribute(useCandidate, bytes: []) }
        w.integrity(password: password)
        w.fingerprint()
        return w.count
    }

    /// Writes the success response to `request`'s transaction, with the sender's address.
    static func writeSuccess(into out: UnsafeMutableRawBufferPointer, transaction: UnsafeRawBufferPointer,
                                     ipv4 address: UInt32, port: UInt16, password: String) -> Int {
        var w = Writer(out, type: bindingSuccess, transaction: Array(transaction))
        let xport = port ^ UInt16(magicCookie >> 16)
        let xaddr = address ^ magicCookie
        w.attribute(xorMappedAddress, bytes: [0, 1, UInt8(xport >> 8), UInt8(xport & 0xFF),
                                              UInt8(xaddr >> 24), UInt8((xaddr >> 16) & 0xFF),
                                              UInt8((xaddr >> 8) & 0xFF), UInt8(xaddr & 0xFF)])
        w.integrity(password: password)
        w.fingerprint()
        return w.count
    }

    /// A parsed message's type, transaction and the attributes ICE reads.
    struct Parsed {
        var type: UInt16
        var transaction: UnsafeRawBufferPointer
        var username: String?
        var integrityOffset: Int?
    }

    /// Parses a STUN message; nil for anything malformed (attributes past the end, bad lengths).
    static func parse(_ b: UnsafeRawBufferPointer) -> Parsed? {
        guard isSTUN(b) else { return nil }
        let length = Int(b.loadBE16(2))
        guard length % 4 == 0, 20 + length <= b.count else { return nil }
        var p = Parsed(type: b.loadBE16(0), transaction: UnsafeRawBufferPointer(rebasing: b[8..<20]))
        var at = 20
        while at + 4 <= 20 + length {
            let type = b.loadBE16(at), size = Int(b.loadBE16(at + 2))
            guard at + 4 + size <= 20 + length else { return nil }
            if type == username, size <= 513 {
                p.username = String(decoding: UnsafeRawBufferPointer(rebasing: b[(at + 4)..<(at + 4 + size)]), as: UTF8.self)
            }
            if type == messageIntegrity, size == 20 { p.integrityOffset = at }
            at += 4 + (size + 3) & ~3
        }
        return p
    }

    /// Checks MESSAGE-INTEGRITY (keyed with `password`) of a parsed message.
    static func integrityValid(_ b: UnsafeRawBufferPointer, _ p: Parsed, password: String) -> Bool {
        guard let mi = p.integrityOffset else { return false }
        // The length field as it was when the HMAC was computed: up to the end of MESSAGE-INTEGRITY.
        var copy = [UInt8](b[0..<mi])
        let adjusted = mi + 24 - 20
        copy[2] = UInt8(adjusted >> 8)
        copy[3] = UInt8(adjusted & 0xFF)
        var digest = [UInt8](repeating: 0, count: 20)
        let key = Array(password.utf8)
        guard bk_dtls_hmac_sha1(key, key.count, copy, copy.count, &digest) == 0 else { return false }
        for i in 0..<20 where digest[i] != b[mi + 4 + i] { return false }
        return true
    }

    private struct Writer {
        let out: UnsafeMutableRawBufferPointer
        var count = 20

        init(_ out: UnsafeMutableRawBufferPointer, type: UInt16, transaction: [UInt8]) {
            self.out = out
            out.storeBE16(0, type)
            out.storeBE16(2, 0)
            out.storeBE32(4, STUNMessage.magicCookie)
            for i in 0..<12 { out[8 + i] = transaction[i] }
        }

        mutating func attribute(_ type: UInt16, bytes: [UInt8]) {
            out.storeBE16(count, type)
            out.storeBE16(count + 2, UInt16(bytes.count))
            for (i, b) in bytes.enumerated() { out[count + 4 + i] = b }
            var end = count + 4 + bytes.count
            while end % 4 != 0 { out[end] = 0; end += 1 }
            count = end
            out.storeBE16(2, UInt16(count - 20))
        }

        mutating func attribute(_ type: UInt16, u32 v: UInt32) {
            attribute(type, bytes: [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)])
        }

        mutating func integrity(password: String) {
            out.storeBE16(2, UInt16(count + 24 - 20))
            var digest = [UInt8](repeating: 0, count: 20)
            let key = Array(password.utf8)
            _ = bk_dtls_hmac_sha1(key, key.count, out.baseAddress!, count, &digest)
            attribute(STUNMessage.messageIntegrity, bytes: digest)
        }

        mutating func fingerprint() {
            out.storeBE16(2, UInt16(count + 8 - 20))
            let crc = STUNCRC32.checksum(UnsafeRawBufferPointer(rebasing: out[0..<count])) ^ 0x5354_554E
            attribute(STUNMessage.fingerprint, u32: crc)
        }
    }
}

extension UnsafeRawBufferPointer {
    func loadBE16(_ at: Int) -> UInt16 { UInt16(self[at]) << 8 | UInt16(self[at + 1]) }
    package func loadBE32(_ at: Int) -> UInt32 {
        UInt32(self[at]) << 24 | UInt32(self[at + 1]) << 16 | UInt32(self[at + 2]) << 8 | UInt32(self[at + 3])
    }
}

extension UnsafeMutableRawBufferPointer {
    func storeBE16(_ at: Int, _ v: UInt16) {
        self[at] = UInt8(v >> 8)
        self[at + 1] = UInt8(v & 0xFF)
    }
    func storeBE32(_ at: Int, _ v: UInt32) {
        self[at] = UInt8(v >> 24)
        self[at + 1] = UInt8((v >> 16) & 0xFF)
        self[at + 2] = UInt8((v >> 8) & 0xFF)
        self[at + 3] = UInt8(v & 0xFF)
    }
}
