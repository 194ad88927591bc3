import BroadcastCore
import BroadcastPipeline
/// Test helpers: expected bytes written literally as hex (spaces ignored) and ASCII.
package func hex(_ s: String) -> [UInt8] {
    let digits = s.filter { !$0.isWhitespace }
    var out: [UInt8] = []
    var i = digits.startIndex
    while i < digits.endIndex {
        let j = digits.index(i, offsetBy: 2)
        out.append(UInt8(digits[i..<j], radix: 16)!)
        i = j
    }
    return out
}

package func ascii(_ s: String) -> [UInt8] { Array(s.utf8) }

/// Runs `body` with a zeroed scratch buffer of `capacity` bytes and returns the first
/// `written` bytes (or nil when the writer reported no fit).
package func captureBytes(capacity: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int?) -> [UInt8]? {
    let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
    defer { buf.deallocate() }
    buf.initializeMemory(as: UInt8.self, repeating: 0)
    guard let n = body(buf) else { return nil }
    return Array(buf[0..<n])
}

package func withBytes<R>(_ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) -> R) -> R {
    bytes.withUnsafeBytes(body)
}
