import Testing
@testable import BroadcastNetwork
import BroadcastCore
import BroadcastPipeline
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(1))) struct HTTPResponseReaderTests {
    /// Feeds `text` in pieces of `step` bytes; the response, or the failure.
    private func read(_ text: String, step: Int = 1 << 20, atEOF: Bool = false,
                      capacity: Int = 64 << 10) -> Result<HTTPResponseReader.Response, HTTPResponseReader.Failure> {
        var reader = HTTPResponseReader(capacity: capacity)
        let bytes = Array(text.utf8)
        var i = 0
        do throws(HTTPResponseReader.Failure) {
            while i < bytes.count {
                let end = min(bytes.count, i + step)
                let fed: Result<Bool, HTTPResponseReader.Failure> = bytes[i..<end].withUnsafeBytes { b in
                    do throws(HTTPResponseReader.Failure) { return .success(try reader.feed(b)) } catch { return .failure(error) }
                }
                let done = try fed.get()
                if done { return .success(reader.response!) }
                i = end
            }
            if atEOF { return .success(try reader.finish()) }
            return .failure(.truncated)
        } catch {
            return .failure(error)
        }
    }

    @Test func contentLengthBodyInOnePieceAndByteByByte() throws {
        let text = "HTTP/1.1 201 Created\r\nLocation: /r/1\r\nContent-Type: application/sdp\r\nContent-Length: 5\r\n\r\nv=0\r\nIGNORED"
        for step in [1, 3, 1000] {
            let r = try read(text, step: step).get()
            #expect(r.status == 201)
            #expect(r.location == "/r/1")
            #expect(r.contentType == "application/sdp")
            #expect(r.body == Array("v=0\r\n".utf8))
        }
    }

    @Test func chunkedBodyWithExtensionsAndTrailer() throws {
        let text = "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "4;x=y\r\nv=0\r\r\n3\r\n\no=\r\n0\r\nX-Trailer: 1\r\n\r\n"
        for step in [1, 2, 7, 1000] {
            let r = try read(text, step: step).get()
            #expect(r.body == Array("v=0\r\no=".utf8))
        }
    }

    @Test func closeDelimitedBodyEndsAtEOF() throws {
        let r = try read("HTTP/1.0 200 OK\r\nContent-Type: application/sdp\r\n\r\nv=0\r\n", step: 4, atEOF: true).get()
        #expect(r.status == 200)
        #expect(r.body == Array("v=0\r\n".utf8))
    }

    @Test func everyFramingObeysTheCap() {
        let big = String(repeating: "a", count: 200)
        #expect(read("HTTP/1.1 200 OK\r\nContent-Length: 200\r\n\r\n" + big, capacity: 100) == .failure(.tooLarge(100)))
        #expect(read("HTTP/1.1 200 OK\r\n\r\n" + big, atEOF: true, capacity: 100) == .failure(.tooLarge(100)))
        #expect(read("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nC8\r\n" + big + "\r\n0\r\n\r\n", capacity: 100)
                == .failure(.tooLarge(100)))
        #expect(read("HTTP/1.1 200 OK\r\nX: " + big + "\r\n\r\n", capacity: 100) == .failure(.tooLarge(100)))
    }

    @Test func malformedFramingIsRefused() {
        for text in ["HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                     "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                     "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
                     "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
                     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n"] {
            guard case .failure(.malformed) = read(text) else {
                Issue.record("accepted: \(text.debugDescription)")
                continue
            }
        }
    }

    @Test func truncatedResponsesAreNotComplete() {
        #expect(read("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", atEOF: true) == .failure(.truncated))
        #expect(read("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", atEOF: true) == .failure(.truncated))
        #expect(read("HTTP/1.1 200 OK\r\n", atEOF: true) == .failure(.truncated))
    }

    @Test func interimResponsesAreSkipped() throws {
        let text = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
            + "HTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nv=0"
        for step in [1, 5, 1000] {
            let r = try read(text, step: step).get()
            #expect(r.status == 201 && r.body == Array("v=0".utf8))
        }
    }

    @Test func bodilessStatusesEndAtTheHead() throws {
        let r = try read("HTTP/1.1 204 No Content\r\n\r\n").get()
        #expect(r.status == 204 && r.body.isEmpty)
        let redirect = try read("HTTP/1.1 307 Temporary Redirect\r\nLocation: https://b.example/w\r\nContent-Length: 0\r\n\r\n").get()
        #expect(redirect.status == 307 && redirect.location == "https://b.example/w")
    }
}
