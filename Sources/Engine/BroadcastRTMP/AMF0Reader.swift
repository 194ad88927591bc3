import BroadcastCore
import BroadcastPipeline
import BroadcastFLV

/// One decoded AMF0 value (AMF0 spec §2). Only used for the few command replies a server sends
/// while we connect and publish, so it may allocate.
package indirect enum AMF0Value: Equatable, Sendable {
    case number(Double)
    case boolean(Bool)
    case string(String)
    /// Anonymous or typed object (the class name of a typed object is dropped).
    case object([AMF0Property])
    case ecmaArray([AMF0Property])
    case strictArray([AMF0Value])
    /// Milliseconds since the epoch (the time-zone field is ignored, as the spec asks).
    case date(Double)
    case null
    case undefined

    /// The value of `key` in an object or ECMA array (first match), else nil.
    package subscript(key: String) -> AMF0Value? {
        switch self {
        case .object(let properties), .ecmaArray(let properties):
            return properties.first { $0.key == key }?.value
        default:
            return nil
        }
    }

    package var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    package var number: Double? {
        if case .number(let n) = self { return n }
        return nil
    }
}

/// A key/value pair of an AMF0 object or ECMA array, in wire order.
package struct AMF0Property: Equatable, Sendable {
    var key: String
    var value: AMF0Value

    package init(_ key: String, _ value: AMF0Value) {
        self.key = key
        self.value = value
    }
}

/// Why AMF0 bytes could not be decoded.
package enum AMF0Error: Error, Equatable, Sendable {
    /// The bytes ended inside a value.
    case truncated
    /// A type marker we do not read (AVM+ switch, XML, references, movie clips, ...).
    case unsupportedMarker(UInt8)
    /// Objects nested deeper than `AMF0Reader.maxDepth` (a hostile server).
    case tooDeep
}

/// Reads AMF0 values from bytes (the counterpart of `AMF0Writer`): number, boolean, string,
/// long string, object, typed object, null, undefined, ECMA array, strict array, date.
/// Nesting is bounded, so a hostile reply cannot exhaust the stack.
package struct AMF0Reader {
    static let maxDepth = 16
    private let bytes: [UInt8]
    /// Index of the next unread byte.
    private(set) var offset = 0

    package init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    package var isAtEnd: Bool { offset >= bytes.count }

    /// Reads the next value.
    package mutating func read() throws(AMF0Error) -> AMF0Value {
        try readValue(depth: 0)
    }

    /// Reads values until the bytes end.
    package mutating func readAll() throws(AMF0Error) -> [AMF0Value] {
        var values: [AMF0Value] = []
        while !isAtEnd { values.append(try read()) }
        return values
    }

    private mutating func readValue(depth: Int) throws(AMF0Error) -> AMF0Value {
        guard depth <= Self.maxDepth else { throw .tooDeep }
        let marker = try byte()
        switch marker {
        case 0x00: return .number(Double(bitPattern: try uint(8)))
        case 0x01: return .boolean(try byte() != 0)
        case 0x02: return .string(try utf8(count: Int(try uint(2))))
        case 0x03: return .object(try properties(depth: depth))
        case 0x05: return .null
        case 0x06: return .undefined
        case 0x08:
            _ = try uint(4) // approximate count: the object-end marker is what ends it
            return .ecmaArray(try properties(depth: depth))
        case 0x0A:
            let count = Int(try uint(4))
            // Each element takes at least one byte: a claimed count beyond that is a lie.
            guard count <= bytes.count - offset else { throw .truncated }
            var items: [AMF0Value] = []
            items.reserveCapacity(count)
            for _ in 0..<count { items.append(try readValue(depth: depth + 1)) }
            return .strictArray(items)
        case 0x0B:
            let ms = Double(bitPattern: try uint(8))
            _ = try uint(2)
            return .date(ms)
        case 0x0C: return .string(try utf8(count: Int(try uint(4))))
        case 0x10:
            _ = try utf8(count: Int(try uint(2))) // class name
            return .object(try properties(depth: depth))
        default:
            throw .unsupportedMarker(marker)
        }
    }

    /// Key/value pairs up to the empty key + object-end marker (00 00 09).
    private mutating func properties(depth: Int) throws(AMF0Error) -> [AMF0Property] {
        var result: [AMF0Property] = []
        while true {
            let keyLength = Int(try uint(2))
            if keyLength == 0 {
                guard offset < bytes.count else { throw .truncated }
                if bytes[offset] == 0x09 { offset += 1; return result }
            }
            let key = try utf8(count: keyLength)
            result.append(AMF0Property(key, try readValue(depth: depth + 1)))
        }
    }

    private mutating func byte() throws(AMF0Error) -> UInt8 {
        guard offset < bytes.count else { throw .truncated }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A big-endian unsigned integer of `width` bytes (1...8).
    private mutating func uint(_ width: Int) throws(AMF0Error) -> UInt64 {
        guard bytes.count - offset >= width else { throw .truncated }
        var v: UInt64 = 0
        for i in 0..<width { v = v << 8 | UInt64(bytes[offset + i]) }
        offset += width
        return v
    }

    private mutating func utf8(count: Int) throws(AMF0Error) -> String {
        guard count >= 0, bytes.count - offset >= count else { throw .truncated }
        defer { offset += count }
        return String(decoding: bytes[offset..<offset + count], as: UTF8.self)
    }
}
