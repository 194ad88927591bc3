import Testing
@testable import BroadcastKit
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastFLV
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording
import BroadcastTestSupport

/// A destination's line in the stats names what its sink is: an MP4 recording is "mp4", not
/// "custom" (the kind comes from the sink itself, so a new sink cannot fall through to "custom").
@Suite(.timeLimit(.minutes(1))) struct DestinationKindTests {
    func kind(_ sink: any DestinationSink) -> String {
        Destination(sink: (sink as? PacketSink) ?? FLVTagSinkAdapter(sink as! TagSink), policy: .default, isPrimary: false,
                    stats: BroadcastStats()).statsNow.kind
    }

    @Test func eachSinkNamesItsKind() {
        let video = VideoEncoderSettings(width: 320, height: 180, fps: 30, bitrateKbps: 300)
        #expect(kind(MP4FileSink(path: "/nonexistent/r.mp4", video: video, audio: AudioEncoderSettings(),
                                 audioDelaySamples: 0)) == "mp4")
        #expect(kind(FLVFileSink(path: "/nonexistent/r.flv")) == "flv")
        #expect(kind(DiscardSink()) == "discard")
        #expect(kind(RTMPPublisher(url: "rtmp://127.0.0.1:1/live", streamKey: "k")) == "rtmp")
        #expect(kind(ScriptedSink("embedder's own")) == "custom")
    }
}
