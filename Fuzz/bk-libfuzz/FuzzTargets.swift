/// Every target, one line each. A new parser of outside bytes is one more line here plus a seed folder `Fuzz/corpus/NAME/`.
let fuzzTargets: [FuzzTarget] = [
    FuzzTarget(name: "rtmp-chunk", summary: "server->client RTMP bytes through RTMPChunkReader, replies through AMF0Reader",
               run: RTMPChunkFuzz.run),
    FuzzTarget(name: "rtmp-url", summary: "RTMPURL(parsing:) and RTMPURL(url:streamKey:)", run: RTMPURLFuzz.run),
    FuzzTarget(name: "srt-url", summary: "SRTURL(parsing:): srt://host:port?streamid=&passphrase=&latency=", run: SRTURLFuzz.run),
    FuzzTarget(name: "whip-url", summary: "WHIPURL(parsing:) and an endpoint's Location through resource(_:)", run: WHIPURLFuzz.run),
    FuzzTarget(name: "whip-sdp", summary: "a WHIP endpoint's SDP answer through SDPAnswer(parsing:)", run: WHIPSDPAnswerFuzz.run),
    FuzzTarget(name: "whip-http", summary: "a WHIP endpoint's HTTP/1.1 response through HTTPResponseReader, cut into reads",
               run: WHIPHTTPFuzz.run),
    FuzzTarget(name: "whip-rtcp", summary: "an endpoint's RTCP through RTCPFeedback.walk, report blocks through RTPDeliveryMeter",
               run: WHIPRTCPFuzz.run),
    FuzzTarget(name: "control-command", summary: "a control-socket line through ControlCommand.parse (JSON and words)",
               run: ControlCommandFuzz.run),
    FuzzTarget(name: "y4m-header", summary: "the first line of a Y4M stream through Y4MHeader.parse", run: Y4MHeaderFuzz.run),
    FuzzTarget(name: "pcm-format", summary: "a --pcm-format spec through PCMFormat(parsing:)", run: PCMFormatFuzz.run),
    FuzzTarget(name: "key-file", summary: "a key file's bytes through the CLI's SecretScrubber.readKeyFile", run: KeyFileFuzz.run),
]
