import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// RTMP message type ids (RTMP 1.0 spec §5.4, §6.2, §7.1). FLV tag types 8/9/18 are the same
/// numbers as the audio, video and AMF0 data messages.
package enum RTMPMessageType {
    static let setChunkSize: UInt8 = 1
    static let abort: UInt8 = 2
    static let acknowledgement: UInt8 = 3
    static let userControl: UInt8 = 4
    static let windowAcknowledgementSize: UInt8 = 5
    static let setPeerBandwidth: UInt8 = 6
    static let audio: UInt8 = 8
    static let video: UInt8 = 9
    package static let commandAMF0: UInt8 = 20

    /// User Control event types (§6.2) we answer.
    static let pingRequest: UInt16 = 6
    static let pingResponse: UInt16 = 7
}
