import Foundation
@testable import BroadcastRTMP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

/// A real nginx + nginx-rtmp ingest on 127.0.0.1:`port`, recording every stream to
/// `<dir>/<stream name>.flv`. Started per test, stopped by its pid.
final class NginxFixture {
    let dir: URL
    let port: Int
    private let process: Process

    static let modulePath = "/usr/lib/nginx/modules/ngx_rtmp_module.so"

    init(port: Int, denyPublish: Bool = false, logLevel: String = "info") throws {
        self.port = port
        dir = try TestMedia.scratchDirectory("nginx-\(port)")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("logs"), withIntermediateDirectories: true)
        // nginx workers run as an unprivileged user when started by root: let them record here.
        chmod(dir.path, 0o777)
        let conf = """
            load_module \(Self.modulePath);
            daemon off;
            error_log \(dir.path)/error.log \(logLevel);
            pid \(dir.path)/nginx.pid;
            events {}
            rtmp {
                server {
                    listen 127.0.0.1:\(port);
                    # Not 4096, so a 4096 in the debug log can only be the client's Set Chunk Size.
                    chunk_size 8192;
                    application live {
                        live on;
                        \(denyPublish ? "deny publish all;" : "")
                        record all;
                        record_path \(dir.path);
                        record_unique off;
                    }
                }
            }
            """
        let confURL = dir.appendingPathComponent("nginx.conf")
        try conf.write(to: confURL, atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", confURL.path, "-p", dir.path + "/"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try waitUntilListening()
    }

    /// The recording of stream `name` (complete once the publisher disconnected).
    func recording(_ name: String) -> URL { dir.appendingPathComponent("\(name).flv") }

    var errorLog: String { (try? String(contentsOf: dir.appendingPathComponent("error.log"), encoding: .utf8)) ?? "" }

    /// Graceful stop (SIGQUIT lets nginx finish recordings), by pid. A graceful stop waits
    /// for open client connections, so after 3 s it escalates to SIGTERM, then SIGKILL.
    func stop() {
        guard process.isRunning else { return }
        let pid = process.processIdentifier
        for signal in [SIGQUIT, SIGTERM, SIGKILL] {
            kill(pid, signal)
            for _ in 0..<60 where process.isRunning { usleep(50_000) }
            if !process.isRunning { break }
        }
        process.waitUntilExit()
    }

    /// Fast shutdown: nginx drops client connections immediately.
    func terminate() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }

    func removeFiles() { try? FileManager.default.removeItem(at: dir) }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    private func waitUntilListening() throws {
        for _ in 0..<100 {
            if Self.canConnect(port: port) { return }
            if !process.isRunning { break }
            usleep(50_000)
        }
        throw NSError(domain: "NginxFixture", code: 1,
                      userInfo: [NSLocalizedDescriptionKey: "nginx did not start: \(errorLog)"])
    }

    static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// A port in 19350..<19850 with nothing listening.
    static func freePort(offset: Int) -> Int {
        var port = 19350 + (Int(getpid()) % 50) * 10 + offset
        while canConnect(port: port) { port += 1 }
        return port
    }
}
