import Glibc
import BroadcastCore
import BroadcastPipeline

/// A connected TCP pair over 127.0.0.1 for tests that read the real kernel's view of a
/// connection (`TCP_INFO`): `client` sends, `peer` is the accepted end.
package struct LoopbackTCPPair {
    package let client: Int32
    package let peer: Int32
    private let listener: Int32

    /// `peerReceiveBuffer`: SO_RCVBUF of the accepted end, set before listen() as a relay does
    /// (the window scale is fixed then); nil keeps the kernel's autotuning.
    package init?(peerReceiveBuffer: Int32? = nil) {
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = peerReceiveBuffer {
            _ = setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let (listener, client) = (listener, client)
        let connected = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                bind(listener, p, len) == 0 && listen(listener, 1) == 0 && getsockname(listener, p, &len) == 0
                    && connect(client, p, len) == 0
            }
        }
        peer = connected ? accept(listener, nil, nil) : -1
        guard peer >= 0 else {
            Glibc.close(listener)
            Glibc.close(client)
            return nil
        }
    }

    package func close() {
        Glibc.close(peer)
        Glibc.close(client)
        Glibc.close(listener)
    }
}
