import Glibc
import Testing
@testable import BroadcastNetwork
import BroadcastCore
import BroadcastPipeline
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(1))) struct HostResolverTests {
    @Test func literalAddressesNeedNoLookup() throws {
        let v4 = try HostResolver.resolve(host: "127.0.0.1", port: 1935, socketType: Int32(SOCK_STREAM.rawValue),
                                          deadline: .after(seconds: 1), stop: nil)
        #expect(v4.count == 1)
        #expect(v4.first?.family == AF_INET)
        let port = v4[0].withSockaddr { sa, _ in
            sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        #expect(port == 1935)
        let v6 = try HostResolver.resolve(host: "::1", port: 9000, socketType: Int32(SOCK_DGRAM.rawValue),
                                          deadline: .after(seconds: 1), stop: nil)
        #expect(v6.first?.family == AF_INET6)
        #expect(v6.first?.length == socklen_t(MemoryLayout<sockaddr_in6>.size))
    }

    @Test func aStopAlreadySetWinsBeforeAnyLookup() {
        let stop = StopFlag()
        stop.set()
        #expect(throws: HostResolver.Failure.stopped) {
            try HostResolver.resolve(host: "localhost", port: 80, socketType: Int32(SOCK_STREAM.rawValue),
                                     deadline: .after(seconds: 1), stop: stop)
        }
    }

    @Test func aNameIsResolvedOnItsLookupThreadWhichThenEnds() throws {
        let addresses = try HostResolver.resolve(host: "localhost", port: 80, socketType: Int32(SOCK_STREAM.rawValue),
                                                 deadline: .after(seconds: 5), stop: StopFlag())
        #expect(!addresses.isEmpty)
        #expect(addresses.allSatisfy { $0.family == AF_INET || $0.family == AF_INET6 })
        // The detached lookup thread leaves the registry once done: no lookup outlives its answer.
        let deadline = Deadline.after(seconds: 5)
        while HostResolver.outstanding > 0 && !deadline.hasPassed { usleep(10_000) }
        #expect(HostResolver.outstanding == 0)
    }
}
