// broadcastctl: the client of `broadcast --control PATH`. Sends one command and prints the
// answer (one JSON line); `subscribe` prints events until the stream ends or Ctrl-C.
#if canImport(Glibc)
import Glibc
#endif

let usage = """
    Usage: broadcastctl SOCKET COMMAND [ARGS...]
      save-replay [SECONDS] [PATH]   save a clip from the replay buffer
      stats                          the --stats-json object, now
      keyframe                       ask the encoder for a keyframe
      set-bitrate KBPS               change the video bitrate
      stop                           stop the stream cleanly
      subscribe                      print events (started, warnings, reconnects, bitrate, drops, saved clips, stopped)
      version                        the protocol and build versions
    Answers longer than 1 MiB without a newline end the connection (exit 2): no server makes this grow.
    Exit status: 0 answered ok, 1 answered with an error, 2 usage or connection error.
    """

func errorLine(_ text: String) {
    let bytes = Array((text + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func die(_ message: String) -> Never {
    errorLine("broadcastctl: \(message)")
    exit(2)
}

let args = Array(CommandLine.arguments.dropFirst())
if args.first == "--help" || args.first == "-h" { print(usage); exit(0) }
guard args.count >= 2 else { errorLine(usage); exit(2) }
let path = args[0]
let line = args.dropFirst().joined(separator: " ") + "\n"

var addr = sockaddr_un()
addr.sun_family = sa_family_t(AF_UNIX)
let pathBytes = Array(path.utf8)
guard pathBytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { die("\(path): path too long") }
withUnsafeMutableBytes(of: &addr.sun_path) { raw in
    for (i, b) in pathBytes.enumerated() { raw[i] = b }
    raw[pathBytes.count] = 0
}
let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
guard fd >= 0 else { die("socket: \(String(cString: strerror(errno)))") }
let rc = withUnsafePointer(to: &addr) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
}
guard rc == 0 else { die("\(path): \(String(cString: strerror(errno)))") }
let bytes = Array(line.utf8)
guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
    die("\(path): send failed: \(String(cString: strerror(errno)))")
}

let subscribing = args[1] == "subscribe"
/// The longest answer line kept: a stats object is a few KB; beyond this the peer is not a broadcast.
let maxAnswerBytes = 1 << 20
var pending: [UInt8] = []
pending.reserveCapacity(64 << 10)
var buffer = [UInt8](repeating: 0, count: 4096)
var status: Int32 = 2
var answered = false
while true {
    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    if n < 0 && errno == EINTR { continue }
    if n <= 0 { break }
    for b in buffer[0..<n] {
        guard b == 0x0A else {
            guard pending.count < maxAnswerBytes else { die("\(path): answer longer than \(maxAnswerBytes >> 20) MiB without a newline; closing") }
            pending.append(b)
            continue
        }
        let text = String(decoding: pending, as: UTF8.self)
        pending.removeAll()
        let out = Array((text + "\n").utf8)
        _ = out.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        if !answered {
            answered = true
            status = text.contains("\"ok\":false") ? 1 : 0
        }
        if !subscribing { close(fd); exit(status) }
    }
}
close(fd)
if !answered { die("\(path): connection closed without an answer") }
exit(status)
