# shellcheck shell=bash
# The one skip check, for scripts/test and scripts/sanitize. Tests/skip-allowlist.txt holds
# "SUBSTRING | reason" lines (allowed in every run) and "[sanitize] SUBSTRING | reason" lines
# (allowed only under a sanitizer). A skip line is a test_results.py "NAME (ID) skipped: REASON".

# Prints the reason when the skip line is allowed in scope $2 ("plain" or "sanitize").
allowed_skip_reason() { # skip-line scope
    local line="$1" scope="$2" entry pattern reason
    while IFS= read -r entry; do
        case "$entry" in ''|'#'*) continue ;; esac
        if [[ "$entry" == "[sanitize] "* ]]; then
            [ "$scope" = sanitize ] || continue
            entry="${entry#\[sanitize\] }"
        fi
        pattern="${entry%% | *}"; reason="${entry#* | }"
        if [[ "$line" == *"$pattern"* ]]; then printf '%s' "$reason"; return 0; fi
    done < "$REPO_ROOT/Tests/skip-allowlist.txt"
    return 1
}

# Checks every skip line of a file; prints each with its verdict. Returns 1 if any is not allowed.
check_skips() { # suite-name skip-lines-file [scope]
    local name="$1" file="$2" scope="${3:-plain}" bad=0 reason line
    [ -f "$file" ] || { echo "SKIP CHECK ($name): no skip list at $file (the run gave no results)"; return 1; }
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        if reason="$(allowed_skip_reason "$line" "$scope")"; then
            echo "skip allowed ($name): $line -- $reason"
        else
            echo "SKIP NOT ALLOWED ($name): $line"
            bad=1
        fi
    done < "$file"
    return $bad
}
