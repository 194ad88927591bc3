import BroadcastCore
import BroadcastPipeline
import BroadcastFLV
import BroadcastNetwork

/// The AMF0 command messages a publisher sends (RTMP 1.0 spec §7.2), encoded with `AMF0Writer`,
/// and the replies it reads.
///
/// Transaction ids are fixed per command: a publisher sends each at most once per connection.
/// The stream key travels only in releaseStream, FCPublish, publish and FCUnpublish, never in
/// `tcUrl`; the caller zeroes those payloads once sent.
package enum RTMPCommand {
    static let connectTransaction: Double = 1
    static let releaseStreamTransaction: Double = 2
    static let fcPublishTransaction: Double = 3
    static let createStreamTransaction: Double = 4
    static let publishTransaction: Double = 5
    /// Sent as `flashVer`: what FFmpeg and OBS send, so ingests treat us as an encoder.
    static let flashVersion = "FMLE/3.0 (compatible; broadcast)"

    /// connect(app, type "nonprivate", flashVer, tcUrl). Returns the byte count, nil if it did not fit.
    /// E-RTMP v2 `capsEx` bit: the client handles NetConnection.Connect.ReconnectRequest.
    static let capsExReconnect: Double = 1
    /// The status code of an E-RTMP v2 reconnect request (its info object may carry a new `tcUrl`).
    static let reconnectRequestCode = "NetConnection.Connect.ReconnectRequest"

    /// `capsEx` (Enhanced RTMP v2) is added when given; servers ignore fields they do not know,
    /// and `enhancedConnect = false` leaves it out for the ones that do not.
    static func connect(app: String, tcUrl: String, capsEx: Double? = nil,
                                into out: UnsafeMutableRawBufferPointer) -> Int? {
        var w = AMF0Writer(buffer: out)
        w.writeString("connect")
        w.writeNumber(connectTransaction)
        w.writeObjectStart()
        w.writePropertyKey("app"); w.writeString(app)
        w.writePropertyKey("type"); w.writeString("nonprivate")
        w.writePropertyKey("flashVer"); w.writeString(flashVersion)
        w.writePropertyKey("tcUrl"); w.writeString(tcUrl)
        if let capsEx { w.writePropertyKey("capsEx"); w.writeNumber(capsEx) }
        w.writeObjectEnd()
        return w.overflowed ? nil : w.offset
    }

    /// releaseStream / FCPublish / FCUnpublish(key): name, transaction, null, key.
    static func streamNameCommand(_ name: String, transaction: Double, key: String,
                                          into out: UnsafeMutableRawBufferPointer) -> Int? {
        var w = AMF0Writer(buffer: out)
        w.writeString(name)
        w.writeNumber(transaction)
        w.writeNull()
        w.writeString(key)
        return w.overflowed ? nil : w.offset
    }

    /// createStream: name, transaction, null.
    static func createStream(into out: UnsafeMutableRawBufferPointer) -> Int? {
        var w = AMF0Writer(buffer: out)
        w.writeString("createStream")
        w.writeNumber(createStreamTransaction)
        w.writeNull()
        return w.overflowed ? nil : w.offset
    }

    /// publish(key, "live") on the created message stream.
    static func publish(key: String, into out: UnsafeMutableRawBufferPointer) -> Int? {
        var w = AMF0Writer(buffer: out)
        w.writeString("publish")
        w.writeNumber(publishTransaction)
        w.writeNull()
        w.writeString(key)
        w.writeString("live")
        return w.overflowed ? nil : w.offset
    }

    /// deleteStream(stream id).
    static func deleteStream(_ streamID: UInt32, into out: UnsafeMutableRawBufferPointer) -> Int? {
        var w = AMF0Writer(buffer: out)
        w.writeString("deleteStream")
        w.writeNumber(0)
        w.writeNull()
        w.writeNumber(Double(streamID))
        return w.overflowed ? nil : w.offset
    }

    /// A decoded command from the server: `_result`, `_error`, `onStatus`, `onBWDone`, ...
    package struct Reply: Equatable, Sendable {
        var name: String
        var transaction: Double
        /// The values after the transaction id (command object, then arguments).
        var arguments: [AMF0Value]

        /// The info object's `code` (e.g. "NetStream.Publish.Start"): the last argument of
        /// onStatus / _result / _error that is an object with a code.
        package var code: String? { arguments.reversed().lazy.compactMap { $0["code"]?.string }.first }
        /// The info object's `level` ("status", "warning", "error").
        package var level: String? { arguments.reversed().lazy.compactMap { $0["level"]?.string }.first }

        /// Decodes an AMF0 command message payload; nil when it is not one.
        package init?(payload: [UInt8]) {
            var reader = AMF0Reader(payload)
            guard let values = try? reader.readAll(), values.count >= 2,
                  let name = values[0].string, let transaction = values[1].number else { return nil }
            self.name = name
            self.transaction = transaction
            self.arguments = Array(values.dropFirst(2))
        }

        init(name: String, transaction: Double, arguments: [AMF0Value]) {
            self.name = name
            self.transaction = transaction
            self.arguments = arguments
        }
    }
}
