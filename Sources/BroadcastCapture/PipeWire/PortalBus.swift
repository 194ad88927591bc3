import CSDBusShim
import BroadcastKit
import Glibc

/// A session-bus connection through sd-bus, with just what the ScreenCast portal flow needs:
/// method calls with `s`/`o`/`u`/`a{sv}` arguments, `a{sv}` result parsing, and waiting for one
/// signal on one object path. sd-bus is reached through `CSDBusShim`, which loads libsystemd on
/// the first connection instead of at process start.
///
/// Only the non-variadic sd-bus API is used (Swift cannot call C variadics). Not thread-safe:
/// the owner serialises access.
final class PortalBus {
    /// One argument of a method call.
    enum Argument {
        case string(String)
        case objectPath(String)
        case options([(String, OptionValue)])
    }

    /// A value inside an `a{sv}` options dictionary.
    enum OptionValue {
        case uint32(UInt32)
        case bool(Bool)
        case string(String)
    }

    /// The parts of a `Response` results dictionary the ScreenCast flow reads.
    struct Results {
        var strings: [String: String] = [:]
        var uint32s: [String: UInt32] = [:]
        /// Node ids from `streams` (`a(ua{sv})`), in order.
        var streamNodeIDs: [UInt32] = []
    }

    /// What `waitForSignal` hands back: the response code and its results.
    struct Response {
        var code: UInt32
        var results: Results
    }

    private let bus: OpaquePointer

    /// Opens the user's session bus (`DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`), or
    /// the bus at `address` when given (tests pass one instead of changing the process environment).
    init(address: String? = nil) throws(CaptureError) {
        // libsystemd is loaded here, on first use (CSDBusShim), not at process start.
        if let reason = bk_sd_bus_load() {
            throw CaptureError(.unavailable, "cannot connect to the D-Bus session bus: \(String(cString: reason))")
        }
        var b: OpaquePointer?
        let r = address.map { bk_sd_bus_open_address($0, &b) } ?? bk_sd_bus_open_user(&b)
        guard r >= 0, let b else {
            throw CaptureError(.unavailable,
                "cannot connect to the D-Bus session bus (\(PortalBus.errno(r))); the screen-cast portal needs a desktop session (DBUS_SESSION_BUS_ADDRESS)")
        }
        bus = b
    }

    deinit {
        bk_sd_bus_flush_close_unref(bus)
    }

    /// Our unique bus name, e.g. ":1.42".
    var uniqueName: String {
        var name: UnsafePointer<CChar>?
        guard bk_sd_bus_get_unique_name(bus, &name) >= 0, let name else { return "" }
        return String(cString: name)
    }

    /// sd-bus returns -errno.
    static func errno(_ r: Int32) -> String { SystemError.describe(-r) }

    // MARK: calls

    /// Calls a method and returns the reply (caller unrefs), or throws with the D-Bus error.
    private func call(destination: String, path: String, interface: String, member: String,
                      _ args: [Argument], timeoutMicroseconds: UInt64) throws(CaptureError) -> OpaquePointer {
        var m: OpaquePointer?
        var r = bk_sd_bus_message_new_method_call(bus, &m, destination, path, interface, member)
        guard r >= 0, let m else { throw CaptureError(.io, "D-Bus: cannot build \(member) (\(PortalBus.errno(r)))") }
        defer { bk_sd_bus_message_unref(m) }
        for arg in args {
            r = PortalBus.append(arg, to: m)
            if r < 0 { throw CaptureError(.io, "D-Bus: cannot build \(member) arguments (\(PortalBus.errno(r)))") }
        }
        var error = bk_sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { bk_sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        r = bk_sd_bus_call(bus, m, timeoutMicroseconds, &error, &reply)
        guard r >= 0, let reply else {
            let name = error.name.map { String(cString: $0) } ?? ""
            let text = error.message.map { String(cString: $0) } ?? PortalBus.errno(r)
            let kind: CaptureError.Kind = name.hasSuffix(".AccessDenied") ? .denied : .unavailable
            throw CaptureError(kind, "\(interface).\(member) failed: \(name.isEmpty ? "" : name + ": ")\(text)")
        }
        return reply
    }

    /// Calls a method whose reply is a single object path (a portal Request handle).
    func callReturningPath(destination: String, path: String, interface: String, member: String,
                           _ args: [Argument], timeoutMicroseconds: UInt64) throws(CaptureError) -> String {
        let reply = try call(destination: destination, path: path, interface: interface, member: member,
                             args, timeoutMicroseconds: timeoutMicroseconds)
        defer { bk_sd_bus_message_unref(reply) }
        var p: UnsafePointer<CChar>?
        guard bk_sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "o")), &p) > 0, let p else {
            throw CaptureError(.badInput, "\(interface).\(member): the reply is not an object path")
        }
        return String(cString: p)
    }

    /// Calls a method whose reply is a single unix fd; returns our own duplicate (close-on-exec).
    func callReturningFD(destination: String, path: String, interface: String, member: String,
                         _ args: [Argument], timeoutMicroseconds: UInt64) throws(CaptureError) -> Int32 {
        let reply = try call(destination: destination, path: path, interface: interface, member: member,
                             args, timeoutMicroseconds: timeoutMicroseconds)
        defer { bk_sd_bus_message_unref(reply) }
        var fd: Int32 = -1
        guard bk_sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "h")), &fd) > 0, fd >= 0 else {
            throw CaptureError(.badInput, "\(interface).\(member): the reply holds no file descriptor")
        }
        // The message owns its fd; keep a copy that outlives it.
        let own = fcntl(fd, F_DUPFD_CLOEXEC, 3)
        if own < 0 { throw CaptureError(.io, "\(member): cannot duplicate the fd (\(SystemError.describe()))") }
        return own
    }

    /// Calls a method and ignores its reply.
    func callReturningNothing(destination: String, path: String, interface: String, member: String,
                              timeoutMicroseconds: UInt64) throws(CaptureError) {
        let reply = try call(destination: destination, path: path, interface: interface, member: member,
                             [], timeoutMicroseconds: timeoutMicroseconds)
        bk_sd_bus_message_unref(reply)
    }

    /// Reads a `u` property through org.freedesktop.DBus.Properties.Get.
    func uint32Property(destination: String, path: String, interface: String, name: String,
                        timeoutMicroseconds: UInt64) throws(CaptureError) -> UInt32 {
        let reply = try call(destination: destination, path: path, interface: "org.freedesktop.DBus.Properties",
                             member: "Get", [.string(interface), .string(name)],
                             timeoutMicroseconds: timeoutMicroseconds)
        defer { bk_sd_bus_message_unref(reply) }
        var value: UInt32 = 0
        guard bk_sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "v")), "u") > 0,
              bk_sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "u")), &value) > 0 else {
            throw CaptureError(.badInput, "\(interface).\(name) is not a u property")
        }
        return value
    }

    // MARK: signals

    /// Waits for `org.freedesktop.portal.Request.Response` on `path`. The match must be added
    /// (with `watchResponse`) before the call that triggers it, so the signal cannot be missed.
    func waitForResponse(_ watch: ResponseWatch, timeoutNanoseconds: Int64) throws(CaptureError) -> Response? {
        let deadline = MediaTime.now() + timeoutNanoseconds
        while watch.box.pointee == nil {
            let r = bk_sd_bus_process(bus, nil)
            if r < 0 { throw CaptureError(.io, "D-Bus connection lost while waiting for the portal (\(PortalBus.errno(r)))") }
            if r > 0 { continue }
            let left = deadline - MediaTime.now()
            if left <= 0 { return nil }
            let w = bk_sd_bus_wait(bus, UInt64(left / 1000))
            if w < 0 { throw CaptureError(.io, "D-Bus wait failed (\(PortalBus.errno(w)))") }
        }
        guard let m = watch.box.pointee else { return nil }
        watch.box.pointee = nil // ours now; the watch must not unref it again
        defer { bk_sd_bus_message_unref(m) }
        var code: UInt32 = 0
        guard bk_sd_bus_message_read_basic(m, CChar(UInt8(ascii: "u")), &code) > 0 else {
            throw CaptureError(.badInput, "the portal's Response signal has no response code")
        }
        return Response(code: code, results: try PortalBus.readResults(m))
    }

    /// A registered match for one Request's Response signal; removes the match when released.
    final class ResponseWatch {
        let box: UnsafeMutablePointer<OpaquePointer?>
        fileprivate var slot: OpaquePointer?
        init() {
            box = .allocate(capacity: 1)
            box.initialize(to: nil)
        }
        deinit {
            if let slot { bk_sd_bus_slot_unref(slot) }
            if let m = box.pointee { bk_sd_bus_message_unref(m) }
            box.deinitialize(count: 1)
            box.deallocate()
        }
    }

    /// Subscribes to the Response signal of the Request object at `path`.
    func watchResponse(path: String) throws(CaptureError) -> ResponseWatch {
        let watch = ResponseWatch()
        // Stores the first matching signal; the waiter reads it after bk_sd_bus_process returns.
        let handler: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<bk_sd_bus_error>?) -> Int32 = { m, user, _ in
            guard let m, let user else { return 0 }
            let box = user.assumingMemoryBound(to: OpaquePointer?.self)
            if box.pointee == nil { box.pointee = bk_sd_bus_message_ref(m) }
            return 1
        }
        var slot: OpaquePointer?
        let r = bk_sd_bus_match_signal(bus, &slot, nil, path, "org.freedesktop.portal.Request", "Response",
                                    handler, UnsafeMutableRawPointer(watch.box))
        if r < 0 { throw CaptureError(.io, "D-Bus: cannot watch \(path) (\(PortalBus.errno(r)))") }
        watch.slot = slot
        return watch
    }

    // MARK: marshalling

    private static func append(_ arg: Argument, to m: OpaquePointer) -> Int32 {
        switch arg {
        case .string(let s): return appendString(s, type: "s", to: m)
        case .objectPath(let s): return appendString(s, type: "o", to: m)
        case .options(let entries):
            var r = bk_sd_bus_message_open_container(m, CChar(UInt8(ascii: "a")), "{sv}")
            if r < 0 { return r }
            for (key, value) in entries {
                r = bk_sd_bus_message_open_container(m, CChar(UInt8(ascii: "e")), "sv")
                if r < 0 { return r }
                r = appendString(key, type: "s", to: m)
                if r < 0 { return r }
                switch value {
                case .uint32(var u):
                    r = bk_sd_bus_message_open_container(m, CChar(UInt8(ascii: "v")), "u")
                    if r >= 0 { r = bk_sd_bus_message_append_basic(m, CChar(UInt8(ascii: "u")), &u) }
                case .bool(let b):
                    var v: Int32 = b ? 1 : 0
                    r = bk_sd_bus_message_open_container(m, CChar(UInt8(ascii: "v")), "b")
                    if r >= 0 { r = bk_sd_bus_message_append_basic(m, CChar(UInt8(ascii: "b")), &v) }
                case .string(let s):
                    r = bk_sd_bus_message_open_container(m, CChar(UInt8(ascii: "v")), "s")
                    if r >= 0 { r = appendString(s, type: "s", to: m) }
                }
                if r < 0 { return r }
                r = bk_sd_bus_message_close_container(m) // v
                if r < 0 { return r }
                r = bk_sd_bus_message_close_container(m) // e
                if r < 0 { return r }
            }
            return bk_sd_bus_message_close_container(m) // a
        }
    }

    private static func appendString(_ s: String, type: Unicode.Scalar, to m: OpaquePointer) -> Int32 {
        s.withCString { bk_sd_bus_message_append_basic(m, CChar(UInt8(ascii: type)), $0) }
    }

    /// Reads an `a{sv}` at the cursor, keeping strings, object paths, u32 values and the node
    /// ids of `streams`; everything else is skipped.
    private static func readResults(_ m: OpaquePointer) throws(CaptureError) -> Results {
        var out = Results()
        let bad = CaptureError(.badInput, "the portal's Response results are not a{sv}")
        guard bk_sd_bus_message_enter_container(m, CChar(UInt8(ascii: "a")), "{sv}") > 0 else { throw bad }
        while bk_sd_bus_message_enter_container(m, CChar(UInt8(ascii: "e")), "sv") > 0 {
            var keyPtr: UnsafePointer<CChar>?
            guard bk_sd_bus_message_read_basic(m, CChar(UInt8(ascii: "s")), &keyPtr) > 0, let keyPtr else { throw bad }
            let key = String(cString: keyPtr)
            var type: CChar = 0
            var contentsPtr: UnsafePointer<CChar>?
            guard bk_sd_bus_message_peek_type(m, &type, &contentsPtr) > 0, let contentsPtr else { throw bad }
            let contents = String(cString: contentsPtr)
            guard bk_sd_bus_message_enter_container(m, CChar(UInt8(ascii: "v")), contents) > 0 else { throw bad }
            switch contents {
            case "s", "o":
                var p: UnsafePointer<CChar>?
                if bk_sd_bus_message_read_basic(m, CChar(UInt8(ascii: contents == "s" ? "s" : "o")), &p) > 0, let p {
                    out.strings[key] = String(cString: p)
                }
            case "u":
                var u: UInt32 = 0
                if bk_sd_bus_message_read_basic(m, CChar(UInt8(ascii: "u")), &u) > 0 { out.uint32s[key] = u }
            case "a(ua{sv})":
                guard bk_sd_bus_message_enter_container(m, CChar(UInt8(ascii: "a")), "(ua{sv})") > 0 else { throw bad }
                while bk_sd_bus_message_enter_container(m, CChar(UInt8(ascii: "r")), "ua{sv}") > 0 {
                    var node: UInt32 = 0
                    guard bk_sd_bus_message_read_basic(m, CChar(UInt8(ascii: "u")), &node) > 0,
                          bk_sd_bus_message_skip(m, "a{sv}") >= 0 else { throw bad }
                    out.streamNodeIDs.append(node)
                    bk_sd_bus_message_exit_container(m) // r
                }
                bk_sd_bus_message_exit_container(m) // a
            default:
                if bk_sd_bus_message_skip(m, contents) < 0 { throw bad }
            }
            bk_sd_bus_message_exit_container(m) // v
            bk_sd_bus_message_exit_container(m) // e
        }
        bk_sd_bus_message_exit_container(m) // a
        return out
    }
}
