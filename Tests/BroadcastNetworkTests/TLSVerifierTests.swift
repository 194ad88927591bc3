import Foundation
import Testing
@testable import BroadcastNetwork
import BroadcastCore
import BroadcastPipeline
import BroadcastTestSupport

/// TLSVerifier against certificates made with openssl: a private CA, a leaf for
/// localhost/127.0.0.1 and a leaf for another name.
@Suite(.timeLimit(.minutes(5)), .serialized) struct TLSVerifierTests {
    struct PKI {
        let dir: URL
        var ca: String { dir.appendingPathComponent("ca.pem").path }
        func chain(_ leaf: String) throws -> String {
            try String(contentsOf: dir.appendingPathComponent("\(leaf).pem"), encoding: .utf8)
        }
    }

    static func openssl(_ args: [String], in dir: URL) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = args
        p.currentDirectoryURL = dir
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "openssl \(args.joined(separator: " "))")
    }

    static func makePKI() throws -> PKI {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tlsv-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=verifier test CA",
                     "-keyout", "ca.key", "-out", "ca.pem", "-addext", "basicConstraints=critical,CA:TRUE",
                     "-addext", "keyUsage=critical,keyCertSign,cRLSign"], in: dir)
        for (name, san) in [("server", "DNS:localhost,IP:127.0.0.1"), ("other", "DNS:wrong.example")] {
            try openssl(["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=\(name)", "-keyout", "\(name).key",
                         "-out", "\(name).csr"], in: dir)
            try "subjectAltName=\(san)\nextendedKeyUsage=serverAuth\n"
                .write(to: dir.appendingPathComponent("\(name).ext"), atomically: true, encoding: .utf8)
            try openssl(["x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                         "-days", "2", "-extfile", "\(name).ext", "-out", "\(name).pem"], in: dir)
        }
        return PKI(dir: dir)
    }

    @Test func trustsTheExtraCAForItsHostNamesOnly() throws {
        let pki = try Self.makePKI()
        defer { try? FileManager.default.removeItem(at: pki.dir) }
        let verifier = try TLSVerifier(extraCAFile: pki.ca)
        let server = try pki.chain("server")
        #expect(verifier.verify(pemChain: server, host: "localhost").isTrusted)
        #expect(verifier.verify(pemChain: server, host: "127.0.0.1").isTrusted)
        let elsewhere = verifier.verify(pemChain: server, host: "ingest.example.com")
        #expect(!elsewhere.isTrusted)
        #expect(elsewhere.reason.contains("different host name"))
        let other = verifier.verify(pemChain: try pki.chain("other"), host: "127.0.0.1")
        #expect(!other.isTrusted)
        #expect(other.reason.contains("different host name"))
        #expect(verifier.verify(pemChain: try pki.chain("other"), host: "wrong.example").isTrusted)
    }

    @Test func refusesAPrivateCAWithoutCAFile() throws {
        let pki = try Self.makePKI()
        defer { try? FileManager.default.removeItem(at: pki.dir) }
        let verifier = try TLSVerifier()
        #expect(verifier.trustedCACount > 50, "the system trust store should be loaded")
        let result = verifier.verify(pemChain: try pki.chain("server"), host: "localhost")
        #expect(!result.isTrusted)
        #expect(result.reason.contains("issuer not trusted"))
        // The same chain in DER through the other entry point gives the same verdict.
        let der = try Self.derBlocks(try pki.chain("server"))
        #expect(verifier.verify(derChain: der, host: "localhost") == result)
        let withCA = try TLSVerifier(extraCAFile: pki.ca)
        #expect(withCA.trustedCACount == verifier.trustedCACount + 1)
        #expect(withCA.verify(derChain: der, host: "localhost").isTrusted)
    }

    @Test func unusableCAFileIsRefused() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-ca-\(getpid()).pem").path
        try "hello\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { unlink(path) }
        #expect(throws: TransportError.self) { _ = try TLSVerifier(extraCAFile: path) }
        #expect(throws: TransportError.self) { _ = try TLSVerifier(extraCAFile: "/nonexistent/ca.pem") }
    }

    @Test func garbageChainIsNotTrusted() throws {
        let verifier = try TLSVerifier()
        let r = verifier.verify(derChain: [[0x30, 0x03, 0x02, 0x01, 0x00]], host: "localhost")
        #expect(!r.isTrusted)
        #expect(r.reason.contains("could not be read"))
    }

    static func derBlocks(_ pem: String) throws -> [[UInt8]] {
        pem.components(separatedBy: "-----BEGIN CERTIFICATE-----").dropFirst().compactMap { block in
            guard let body = block.components(separatedBy: "-----END CERTIFICATE-----").first else { return nil }
            return Data(base64Encoded: body.filter { !$0.isWhitespace }).map { [UInt8]($0) }
        }
    }
}
