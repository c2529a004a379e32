#!/usr/bin/env bash
# Kills `mhdb export` with SIGKILL at random points, N times, and checks after each kill that
# the next export to the same destination finishes without a manual step (what a killed run
# left beside the destination is removed) and that every copy verifies with the source's
# document count. Prints the kills, how many left a building directory behind, and failures.
#
#   cargo build --release && tools/reliability/export_kill.sh 200 [SEED]
set -euo pipefail

runs=${1:-200}
RANDOM=${2:-1}
mhdb=${MHDB:-target/release/mhdb}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

src=$work/src
dest=$work/copy
building=$work/.copy.mhdb-export
"$mhdb" create "$src" >/dev/null 2>&1
for i in $(seq 1 20000); do
    printf '{"id": "doc-%d", "text": "document %d of the export kill loop, words %d %d %d"}\n' \
        "$i" "$i" $((i % 97)) $((i % 89)) $((i % 83))
done | "$mhdb" add "$src" - 2>/dev/null
want=$("$mhdb" stats "$src" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["live_docs"])')

live_docs() {
    "$mhdb" stats "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["live_docs"])'
}

left=0
failures=0
for n in $(seq 1 "$runs"); do
    "$mhdb" export "$src" "$dest" 2>/dev/null &
    pid=$!
    # A random point in the export's run (about a quarter of a second, mostly fsyncs), or
    # after it.
    sleep "$(printf '0.%03d' $((RANDOM % 300)))"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    [ -d "$building" ] && left=$((left + 1))
    if [ ! -d "$dest" ]; then
        if ! "$mhdb" export "$src" "$dest" 2>"$work/err"; then
            failures=$((failures + 1))
            echo "kill $n: the next export failed: $(cat "$work/err")"
            rm -rf "$building" "$dest"
            continue
        fi
    fi
    if ! "$mhdb" verify "$dest" >/dev/null 2>&1 || [ "$(live_docs "$dest")" != "$want" ]; then
        failures=$((failures + 1))
        echo "kill $n: the copy is not whole"
    fi
    if [ -d "$building" ]; then
        failures=$((failures + 1))
        echo "kill $n: $building is still there after the next export"
    fi
    rm -rf "$dest" "$building"
done
echo "kills: $runs, building directory left by the kill: $left, failures: $failures"
[ "$failures" -eq 0 ]
