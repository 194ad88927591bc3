import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording

/// Bytes of text built in storage allocated once: the stats JSON line and the status line are
/// written here every second without a heap allocation (String interpolation would allocate each
/// time). It never grows: text past the capacity is cut and `overflowed` is set, and the caller
/// falls back to an allocating path for that one report.
package final class ReportBuffer {
    private let storage: UnsafeMutablePointer<UInt8>
    let capacity: Int
    package private(set) var count = 0
    package private(set) var overflowed = false

    package init(capacity: Int) {
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
    }

    deinit { storage.deallocate() }

    package func clear() {
        count = 0
        overflowed = false
    }

    /// The text so far.
    package var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: storage, count: count) }

    /// The text as a String (allocates: for the on-demand paths, not the once-a-second ones).
    var string: String { String(decoding: bytes, as: UTF8.self) }

    package func append(byte: UInt8) {
        guard count < capacity else { overflowed = true; return }
        storage[count] = byte
        count += 1
    }

    func append(_ s: StaticString) {
        s.withUTF8Buffer { for b in $0 { append(byte: b) } }
    }

    /// A String's UTF-8 as it is (no escaping): fixed words such as states and kinds.
    package func append(_ s: String) {
        var s = s
        s.withUTF8 { for b in $0 { append(byte: b) } }
    }

    package func append(_ n: Int) {
        if n < 0 { append(byte: 45) }
        let m = n.magnitude   // magnitude: no overflow for Int.min
        var div: UInt = 1
        while m / div >= 10 { div *= 10 }
        while div > 0 { append(byte: UInt8(truncatingIfNeeded: (m / div) % 10) + 48); div /= 10 }
    }

    /// `v` with a fixed number of decimals ("0" for NaN and infinities), as `fixed(_:_:)` formats it.
    package func append(_ v: Double, decimals: Int) {
        guard v.isFinite else { append(byte: 48); return }
        var scale = 1
        for _ in 0..<decimals { scale *= 10 }
        let n = Int((abs(v) * Double(scale)).rounded())
        if v < 0 && n != 0 { append(byte: 45) }
        append(n / scale)
        guard decimals > 0 else { return }
        append(byte: 46)
        var frac = n % scale, div = scale / 10
        while div > 0 { append(byte: UInt8(truncatingIfNeeded: frac / div) + 48); frac %= div; div /= 10 }
    }

    /// `s` as a JSON string literal (`JSONString`).
    func appendJSONString(_ s: String) {
        JSONString.escape(s) { append(byte: $0) }
    }

    /// Pads with spaces up to `length` bytes.
    package func pad(to length: Int) {
        while count < length && count < capacity { append(byte: 32) }
    }
}
