import BroadcastCore
import BroadcastPipeline

/// Writes AMF0 values (Action Message Format 0) into a caller-provided buffer.
///
/// Never allocates. Every write is bounds-checked: a value that would not fit is not written
/// at all, the call returns `false`, and `overflowed` stays `true` from then on, so a
/// sequence of writes can be checked once at the end.
package struct AMF0Writer {
    /// AMF0 type markers (AMF0 spec §2.1).
    @usableFromInline enum Marker: UInt8 {
        case number = 0x00, boolean = 0x01, string = 0x02, object = 0x03
        case null = 0x05, ecmaArray = 0x08, objectEnd = 0x09
    }

    let buffer: UnsafeMutableRawBufferPointer
    /// Where the next value goes; advances past every successful write.
    package private(set) var offset: Int
    /// True once any write did not fit.
    package private(set) var overflowed = false

    package init(buffer: UnsafeMutableRawBufferPointer, offset: Int = 0) {
        self.buffer = buffer
        self.offset = offset
    }

    /// Bytes written since `offset` was `start`.
    func written(since start: Int = 0) -> Int { offset - start }

    /// Number: 0x00 + IEEE-754 double, big-endian.
    @discardableResult
    package mutating func writeNumber(_ value: Double) -> Bool {
        guard reserve(9) else { return false }
        put(Marker.number.rawValue)
        putBE64(value.bitPattern)
        return true
    }

    /// Boolean: 0x01 + one byte (0 or 1).
    @discardableResult
    package mutating func writeBoolean(_ value: Bool) -> Bool {
        guard reserve(2) else { return false }
        put(Marker.boolean.rawValue)
        put(value ? 1 : 0)
        return true
    }

    /// Short string: 0x02 + 16-bit BE length + UTF-8 bytes. Fails for strings over 65535 bytes.
    @discardableResult
    package mutating func writeString(_ value: String) -> Bool {
        let length = value.utf8.count
        guard length <= 0xFFFF, reserve(3 + length) else { overflowed = true; return false }
        put(Marker.string.rawValue)
        putUTF8(value, length: length)
        return true
    }

    /// Null: 0x05.
    @discardableResult
    package mutating func writeNull() -> Bool {
        guard reserve(1) else { return false }
        put(Marker.null.rawValue)
        return true
    }

    /// ECMA array start: 0x08 + 32-bit BE approximate count. Follow with key/value pairs
    /// and `writeObjectEnd()`.
    @discardableResult
    package mutating func writeECMAArrayStart(count: UInt32) -> Bool {
        guard reserve(5) else { return false }
        put(Marker.ecmaArray.rawValue)
        putBE32(count)
        return true
    }

    /// Anonymous object start: 0x03. Follow with key/value pairs and `writeObjectEnd()`.
    @discardableResult
    package mutating func writeObjectStart() -> Bool {
        guard reserve(1) else { return false }
        put(Marker.object.rawValue)
        return true
    }

    /// Object/ECMA-array property key: 16-bit BE length + UTF-8, no type marker.
    @discardableResult
    package mutating func writePropertyKey(_ key: String) -> Bool {
        let length = key.utf8.count
        guard length <= 0xFFFF, reserve(2 + length) else { overflowed = true; return false }
        putUTF8(key, length: length)
        return true
    }

    /// Object end: empty key (00 00) + 0x09.
    @discardableResult
    package mutating func writeObjectEnd() -> Bool {
        guard reserve(3) else { return false }
        put(0); put(0); put(Marker.objectEnd.rawValue)
        return true
    }

    // MARK: - Encoded sizes (for reserving exactly)

    /// Encoded size of a short string value (marker included).
    static func stringSize(_ value: String) -> Int { 3 + value.utf8.count }
    /// Encoded size of a property key.
    static func keySize(_ key: String) -> Int { 2 + key.utf8.count }
    static let numberSize = 9
    static let booleanSize = 2
    static let ecmaArrayStartSize = 5
    static let objectEndSize = 3

    // MARK: - Raw access

    private mutating func reserve(_ count: Int) -> Bool {
        if overflowed || offset < 0 || buffer.count - offset < count {
            overflowed = true
            return false
        }
        return true
    }

    private mutating func put(_ byte: UInt8) {
        buffer[offset] = byte
        offset += 1
    }

    private mutating func putBE32(_ v: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { put(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }

    private mutating func putBE64(_ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { put(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    private mutating func putUTF8(_ s: String, length: Int) {
        put(UInt8(truncatingIfNeeded: length >> 8))
        put(UInt8(truncatingIfNeeded: length))
        for byte in s.utf8 { put(byte) }
    }
}
