import BroadcastKit

/// A WHIP endpoint's HTTP/1.1 response (status line, header fields, Content-Length, chunked or
/// close-delimited framing) through HTTPResponseReader, as WHIPHTTPClient reads it. The first
/// byte picks how the rest is cut into reads. Oracles: the outcome does not depend on how the
/// bytes were cut (one read vs. reads of 1...8 bytes); an accepted response has a status in
/// 100...599 and a body within the cap.
enum WHIPHTTPFuzz {
    static let capacity = 4096

    static func run(_ data: UnsafeRawBufferPointer) {
        guard let first = data.first else { return }
        let rest = UnsafeRawBufferPointer(rebasing: data[1...])
        let whole = read(rest, step: rest.count + 1)
        let cut = read(rest, step: Int(first % 8) + 1)
        guard whole == cut else {
            FuzzTarget.fail("whip-http", "the outcome depends on the reads: \(whole) vs \(cut) (step \(first % 8 + 1))")
        }
        if case .response(let r) = whole {
            guard (100...599).contains(r.status) else { FuzzTarget.fail("whip-http", "accepted status \(r.status)") }
            guard r.body.count <= capacity else { FuzzTarget.fail("whip-http", "a body of \(r.body.count) bytes over the cap") }
        }
    }

    enum Outcome: Equatable {
        case response(HTTPResponseReader.Response)
        case failure(HTTPResponseReader.Failure)
    }

    /// Feeds `bytes` in reads of `step`, then the close.
    static func read(_ bytes: UnsafeRawBufferPointer, step: Int) -> Outcome {
        var reader = HTTPResponseReader(capacity: capacity)
        var i = 0
        do throws(HTTPResponseReader.Failure) {
            while i < bytes.count {
                let end = min(bytes.count, i + step)
                if try reader.feed(UnsafeRawBufferPointer(rebasing: bytes[i..<end])) { return .response(reader.response!) }
                i = end
            }
            return .response(try reader.finish())
        } catch {
            return .failure(error)
        }
    }
}
