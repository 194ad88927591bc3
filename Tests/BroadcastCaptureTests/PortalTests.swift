import BroadcastKit
import Foundation
import Testing

@testable import BroadcastCapture

/// The ScreenCast portal client against tools/fake_portal.py (a stand-in portal) on the private
/// session bus of scripts/pipewire-up, which activates nothing (so an installed xdg-desktop-portal
/// never answers in its place). Only what the real portal cannot be made to do on demand is here:
/// deny, cancel, never answering. The grant, the restore token and the cursor modes run against the
/// real portal in Tests/Integration/test_real_portal.py (docs/TEST-DEBTS.md).
enum PortalTestEnvironment {
    static let repoRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// A Python with dbus-next: BROADCAST_TEST_PYTHON, else the repo's .venv.
    static let python: String? = {
        let env = ProcessInfo.processInfo.environment
        let candidates: [String?] = [env["BROADCAST_TEST_PYTHON"], repoRoot.appendingPathComponent(".venv/bin/python").path]
        for case let path? in candidates where FileManager.default.isExecutableFile(atPath: path) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: path)
            p.arguments = ["-c", "import dbus_next"]
            p.standardError = FileHandle.nullDevice
            guard (try? p.run()) != nil else { continue }
            p.waitUntilExit()
            if p.terminationStatus == 0 { return path }
        }
        return nil
    }()
    static let busAddress = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]
    /// A real portal already on the bus would answer instead of the stand-in.
    static let realPortalPresent = PipeWireCapture.portalAvailable(timeoutSeconds: 2)
    static var ready: Bool {
        busAddress != nil && PipeWireTestEnvironment.hasTestNodes && python != nil && !realPortalPresent
    }
    static let reason = "needs the private session bus and PipeWire of scripts/pipewire-up (eval \"$(scripts/pipewire-up)\"), "
        + "no real portal on that bus, and a Python with dbus-next (.venv or BROADCAST_TEST_PYTHON)"
}

/// One running stand-in portal; stopped (and waited for) on `stop()`.
final class FakePortal {
    let process = Process()
    let log: URL

    init(mode: String, dir: URL, extra: [String] = []) throws {
        log = dir.appendingPathComponent("portal.log")
        process.executableURL = URL(fileURLWithPath: try #require(PortalTestEnvironment.python))
        process.arguments = [PortalTestEnvironment.repoRoot.appendingPathComponent("tools/fake_portal.py").path,
                             "--mode", mode, "--log", log.path] + extra
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        // "ready" once the name is owned.
        let line = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
        try #require(line.hasPrefix("ready"), "stand-in portal did not start: \(line)")
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }

    /// The JSON lines the stand-in logged.
    func entries() throws -> [[String: Any]] {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }
}

@Suite("ScreenCast portal", .serialized, .timeLimit(.minutes(5)))
struct PortalTests {
    @Test("cursor mode: the requested one when offered, else the other, else none")
    func cursorChoice() {
        #expect(ScreenCastPortal.chooseCursorMode(.embedded, available: 7) == 2)
        #expect(ScreenCastPortal.chooseCursorMode(.hidden, available: 7) == 1)
        #expect(ScreenCastPortal.chooseCursorMode(.embedded, available: 1) == 1)
        #expect(ScreenCastPortal.chooseCursorMode(.hidden, available: 2) == 2)
        #expect(ScreenCastPortal.chooseCursorMode(.hidden, available: 4) == 0)
    }

    @Test("restore token file: 0600 in a 0700 directory, read back, replaced")
    func tokenFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("portal-token-\(getpid())-\(UUID())")
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = PortalRestoreToken(path: dir.appendingPathComponent("state/broadcast/portal-restore-token").path)
        #expect(store.load() == nil)
        try store.store("abc-123")
        #expect(store.load() == "abc-123")
        let attrs = try FileManager.default.attributesOfItem(atPath: store.path)
        #expect((attrs[.posixPermissions] as? Int) == 0o600)
        let dirAttrs = try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent("state/broadcast").path)
        #expect((dirAttrs[.posixPermissions] as? Int) == 0o700)
        try store.store("def-456")
        #expect(store.load() == "def-456")
    }

    // The bus address is passed in, not set in the environment: other suites run in parallel
    // in this process and read DBUS_SESSION_BUS_ADDRESS (issue 25).
    @Test("no session bus: the portal is not available and opening it says why")
    func noBus() throws {
        let nowhere = "unix:path=/nonexistent/broadcast-test-bus"
        #expect(!ScreenCastPortal.isAvailable(timeoutSeconds: 1, busAddress: nowhere))
        do {
            _ = try ScreenCastPortal(timeoutSeconds: 1, busAddress: nowhere)
            Issue.record("a portal session was opened without a bus")
        } catch {
            #expect(error.kind == .unavailable)
            #expect(error.message.contains("session bus"), "\(error.message)")
        }
    }

    @Test("deny and cancel in the dialog are .denied",
          .enabled(if: PortalTestEnvironment.ready, Comment(rawValue: PortalTestEnvironment.reason)),
          arguments: ["deny", "cancel"])
    func refused(mode: String) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("portal-\(mode)-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let portal = try FakePortal(mode: mode, dir: dir)
        defer { portal.stop() }
        var o = PipeWireOptions(appAudio: false, mic: false)
        o.portalTimeoutSeconds = 10
        o.portalRestoreToken = PortalRestoreToken(path: dir.appendingPathComponent("token").path)
        do {
            _ = try PipeWireCapture.makePortalSources(o)
            Issue.record("\(mode): sources were made")
        } catch {
            #expect(error.kind == .denied)
            #expect(error.message == "screen capture was cancelled or denied in the portal dialog")
        }
        #expect(o.portalRestoreToken?.load() == nil)
    }

    @Test("a portal that never answers times out with a clear error",
          .enabled(if: PortalTestEnvironment.ready, Comment(rawValue: PortalTestEnvironment.reason)))
    func silent() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("portal-silent-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let portal = try FakePortal(mode: "silent", dir: dir)
        defer { portal.stop() }
        var o = PipeWireOptions(appAudio: false, mic: false)
        o.portalTimeoutSeconds = 1
        o.portalRestoreToken = nil
        let t0 = Date()
        do {
            _ = try PipeWireCapture.makePortalSources(o)
            Issue.record("silent portal: sources were made")
        } catch {
            #expect(error.kind == .unavailable)
            #expect(error.message.contains("did not answer Start within 1 s"), "\(error.message)")
        }
        let took = Date().timeIntervalSince(t0)
        #expect(took >= 0.9 && took < 5, "took \(took) s")
    }
}
