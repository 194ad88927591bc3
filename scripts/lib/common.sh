# shellcheck shell=bash
# Shared helpers for scripts/*. Source it; it sets REPO_ROOT, cds there and puts swift on PATH.

# Resolve the repo root from this file's own location, so every script works from any cwd.
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export REPO_ROOT
cd "$REPO_ROOT"

# Swift lives in /opt/swift on our machines; only add it when `swift` is not already found.
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

# The measurement toolkit (tools/bktools) is importable by every script, test and tool without
# a sys.path edit.
PYTHONPATH="$REPO_ROOT/tools${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH

VENV_DIR="$REPO_ROOT/.venv"
VENV_PY="$VENV_DIR/bin/python"
BROADCAST_BIN="${BROADCAST_BIN:-$REPO_ROOT/.build/release/broadcast}"
export VENV_DIR VENV_PY BROADCAST_BIN

# Short progress lines go to stderr so stdout stays for data.
say()  { printf '==> %s\n' "$*" >&2; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die()  { printf 'error: %s\n' "$*" >&2; exit 1; }

# Run as root directly, otherwise through sudo (bootstrap needs it for apt).
as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# True when something accepts TCP connections on 127.0.0.1:$1.
port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# True when pid $1 is alive (and not a zombie).
pid_alive() {
    [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null || return 1
    local state
    state="$(ps -o stat= -p "$1" 2>/dev/null || true)"
    [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}

# Send TERM to pid $1 and wait up to $2 seconds (default 10), then KILL.
stop_pid() {
    local pid="$1" wait_s="${2:-10}" i
    pid_alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < wait_s * 10; i++)); do
        pid_alive "$pid" || return 0
        sleep 0.1
    done
    warn "pid $pid did not stop on TERM; sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.2
}
