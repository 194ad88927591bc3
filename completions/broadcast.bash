# bash completion for broadcast(1). Generated from Sources/BroadcastCLI/OptionTable.swift by scripts/gen-docs; do not edit.
_broadcast() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    case "$prev" in
        --service) COMPREPLY=($(compgen -W "twitch youtube facebook kick" -- "$cur")); return ;;
        --bitrate-follows) COMPREPLY=($(compgen -W "primary slowest" -- "$cur")); return ;;
        --res) COMPREPLY=($(compgen -W "360p 480p 720p 1080p" -- "$cur")); return ;;
        --preset) COMPREPLY=($(compgen -W "ultrafast superfast veryfast faster fast medium" -- "$cur")); return ;;
        --audio-codec) COMPREPLY=($(compgen -W "aac opus" -- "$cur")); return ;;
        --source) COMPREPLY=($(compgen -W "auto test screen screen-node y4m:" -- "$cur")); return ;;
        --cursor) COMPREPLY=($(compgen -W "embedded hidden" -- "$cur")); return ;;
        --test-pattern) COMPREPLY=($(compgen -W "moving static" -- "$cur")); return ;;
        --test-pixel-format) COMPREPLY=($(compgen -W "i420 bgrx" -- "$cur")); return ;;
        --key-file|--srt-passphrase-file|--ca-file|--record|--pcm|--control|--config|--stats-json|--heartbeat|--check-heartbeat) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --replay-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --url|--key|--record-min-free|--reconnect-attempts|--reconnect-delay|--fps|--video-bitrate|--x264-threads|--audio-bitrate|--screen-node|--app-audio|--mic|--pcm-format|--replay-seconds|--duration|--max-age|--memory-budget|--test-rotate-every|--test-audio-skew-ppm|--test-jitter-ms|--test-mic-delay-ms|--test-app-buffer-frames|--test-gap-at|--test-gap-ms) return ;;
    esac
    COMPREPLY=($(compgen -W "--url --service --key-file --key --srt-passphrase-file --require-all --bitrate-follows --no-adaptive-bitrate --no-enhanced-rtmp-connect --ca-file --record --record-min-free --no-publish --reconnect-attempts --reconnect-delay --res --fps --video-bitrate --preset --x264-threads --audio-codec --audio-bitrate --source --screen-node --app-audio --mic --no-app-audio --no-mic --cursor --pcm --pcm-format --list-sources --replay-seconds --replay-dir --control --config --print-config --duration --stats-json --heartbeat --check-heartbeat --max-age --memory-budget --print-memory-plan --quiet -h --help --version --test-pattern --test-rotate-every --test-pixel-format --test-audio-skew-ppm --test-jitter-ms --test-mic-delay-ms --test-app-buffer-frames --test-gap-at --test-gap-ms" -- "$cur"))
}
complete -F _broadcast broadcast
