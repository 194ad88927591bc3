import Glibc

/// A client of the xdg-desktop-portal ScreenCast interface over sd-bus:
/// CreateSession → SelectSources → Start → OpenPipeWireRemote.
///
/// Each of the first three calls returns a Request object and answers later with its
/// `Response(u code, a{sv} results)` signal; code 1 means the user cancelled the dialog, 2 that
/// it was denied or failed. The session (and with it the PipeWire stream) lives as long as this
/// bus connection, so the object must outlive the capture; `close()` ends it.
final class ScreenCastPortal {
    /// What a granted session hands over.
    struct Grant {
        /// The PipeWire node of the chosen screen, reachable through `remoteFD`.
        var nodeID: UInt32
        /// A PipeWire remote fd for `pw_context_connect_fd` (owned by the receiver).
        var remoteFD: Int32
        /// The token to send next time, when the portal handed one out.
        var restoreToken: String?
        /// The cursor mode that was requested (1 hidden, 2 embedded), 0 if none was.
        var cursorMode: UInt32
        /// Whether a stored restore token was sent with SelectSources.
        var sentRestoreToken: Bool
    }

    static let busName = "org.freedesktop.portal.Desktop"
    static let objectPath = "/org/freedesktop/portal/desktop"
    static let interface = "org.freedesktop.portal.ScreenCast"

    private let bus: PortalBus
    private let timeoutNanoseconds: Int64
    private var sessionHandle: String?
    private var requestCounter = 0

    /// - Parameters:
    ///   - timeoutSeconds: how long to wait for each portal answer (the dialog included).
    ///   - busAddress: a D-Bus address instead of the session bus of the environment.
    init(timeoutSeconds: Double, busAddress: String? = nil) throws(CaptureError) {
        bus = try PortalBus(address: busAddress)
        timeoutNanoseconds = Int64(max(0.1, timeoutSeconds) * 1e9)
    }

    /// True when the session bus is reachable and org.freedesktop.portal.Desktop exports the
    /// ScreenCast interface (its `version` property answers within `timeoutSeconds`).
    static func isAvailable(timeoutSeconds: Double, busAddress: String? = nil) -> Bool {
        guard let bus = try? PortalBus(address: busAddress) else { return false }
        let version = try? bus.uint32Property(destination: busName, path: objectPath, interface: interface,
                                              name: "version", timeoutMicroseconds: UInt64(timeoutSeconds * 1e6))
        return version != nil
    }

    /// Runs the whole flow and returns the granted stream.
    /// - Parameters:
    ///   - cursor: embedded or hidden; falls back to what the portal offers.
    ///   - restoreToken: a token from an earlier run, sent so the dialog can be skipped.
    func start(cursor: PipeWireOptions.Cursor, restoreToken: String?) throws(CaptureError) -> Grant {
        let version = try property("version")
        // AvailableCursorModes exists from version 2; persist_mode/restore_token from 4.
        let cursorModes = version >= 2 ? ((try? property("AvailableCursorModes")) ?? 0) : 0
        let cursorMode = ScreenCastPortal.chooseCursorMode(cursor, available: cursorModes)

        let created = try request("CreateSession", leading: [],
                                  options: [("session_handle_token", .string(nextToken("session")))])
        guard let session = created.strings["session_handle"] else {
            throw CaptureError(.badInput, "the portal's CreateSession answer has no session_handle")
        }
        sessionHandle = session

        var select: [(String, PortalBus.OptionValue)] = [("types", .uint32(1)), ("multiple", .bool(false))]
        if cursorMode != 0 { select.append(("cursor_mode", .uint32(cursorMode))) }
        var sentToken = false
        if version >= 4 {
            select.append(("persist_mode", .uint32(2)))
            if let restoreToken {
                select.append(("restore_token", .string(restoreToken)))
                sentToken = true
            }
        }
        _ = try request("SelectSources", leading: [.objectPath(session)], options: select)

        let started = try request("Start", leading: [.objectPath(session), .string("")], options: [])
        guard let node = started.streamNodeIDs.first else {
            throw CaptureError(.unavailable, "the screen-cast portal granted no stream")
        }
        let fd = try bus.callReturningFD(destination: ScreenCastPortal.busName, path: ScreenCastPortal.objectPath,
                                         interface: ScreenCastPortal.interface, member: "OpenPipeWireRemote",
                                         [.objectPath(session), .options([])],
                                         timeoutMicroseconds: UInt64(timeoutNanoseconds / 1000))
        return Grant(nodeID: node, remoteFD: fd, restoreToken: started.strings["restore_token"],
                     cursorMode: cursorMode, sentRestoreToken: sentToken)
    }

    /// Closes the portal session (best effort); the compositor stops the stream.
    func close() {
        guard let session = sessionHandle else { return }
        sessionHandle = nil
        _ = try? bus.callReturningNothing(destination: ScreenCastPortal.busName, path: session,
                                          interface: "org.freedesktop.portal.Session", member: "Close",
                                          timeoutMicroseconds: 2_000_000)
    }

    deinit { close() }

    /// 2 (embedded) or 1 (hidden) when offered; otherwise whichever of the two is; 0 for none.
    static func chooseCursorMode(_ cursor: PipeWireOptions.Cursor, available: UInt32) -> UInt32 {
        let wanted: UInt32 = cursor == .embedded ? 2 : 1
        if available & wanted != 0 { return wanted }
        let other: UInt32 = wanted == 2 ? 1 : 2
        return available & other != 0 ? other : 0
    }

    // MARK: requests

    private static func seconds(_ ns: Int64) -> String {
        ns % 1_000_000_000 == 0 ? "\(ns / 1_000_000_000)" : "\(Double(ns) / 1e9)"
    }

    private func property(_ name: String) throws(CaptureError) -> UInt32 {
        try bus.uint32Property(destination: ScreenCastPortal.busName, path: ScreenCastPortal.objectPath,
                               interface: ScreenCastPortal.interface, name: name,
                               timeoutMicroseconds: UInt64(timeoutNanoseconds / 1000))
    }

    private func nextToken(_ kind: String) -> String {
        requestCounter += 1
        return "broadcast_\(kind)_\(getpid())_\(requestCounter)"
    }

    /// Calls a Request-returning method and waits for its Response; maps codes 1/2 to `.denied`.
    private func request(_ member: String, leading: [PortalBus.Argument],
                         options: [(String, PortalBus.OptionValue)]) throws(CaptureError) -> PortalBus.Results {
        let token = nextToken("request")
        // The Request path is predictable, so the Response can be watched before the call.
        let sender = bus.uniqueName.dropFirst().replacingDots()
        let expected = "\(ScreenCastPortal.objectPath)/request/\(sender)/\(token)"
        var watch = try bus.watchResponse(path: expected)
        let path = try bus.callReturningPath(destination: ScreenCastPortal.busName, path: ScreenCastPortal.objectPath,
                                             interface: ScreenCastPortal.interface, member: member,
                                             leading + [.options(options + [("handle_token", .string(token))])],
                                             timeoutMicroseconds: UInt64(timeoutNanoseconds / 1000))
        if path != expected { watch = try bus.watchResponse(path: path) } // portals older than 0.9
        guard let response = try bus.waitForResponse(watch, timeoutNanoseconds: timeoutNanoseconds) else {
            throw CaptureError(.unavailable,
                "the screen-cast portal did not answer \(member) within \(ScreenCastPortal.seconds(timeoutNanoseconds)) s; is a portal backend running?")
        }
        switch response.code {
        case 0: return response.results
        case 1, 2: throw CaptureError(.denied, "screen capture was cancelled or denied in the portal dialog")
        default: throw CaptureError(.unavailable, "the screen-cast portal failed \(member) (response \(response.code))")
        }
    }
}

private extension Substring {
    /// ":1.42" → "1_42", the form portals use in Request object paths.
    func replacingDots() -> String { String(map { $0 == "." ? "_" : $0 }) }
}
