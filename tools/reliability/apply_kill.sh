#!/usr/bin/env bash
# Kills `mhdb dedup --apply` with SIGKILL at random points, N times, and checks after each
# kill that every file under a final name in the output directory is byte for byte the file
# an uninterrupted run writes (never a partial one), and that a rerun (--overwrite) writes
# exactly those files and leaves no temporary file. Prints the kills, how many left a
# temporary file behind, and failures.
#
#   cargo build --release && tools/reliability/apply_kill.sh 200 [SEED]
set -euo pipefail

runs=${1:-200}
RANDOM=${2:-1}
mhdb=${MHDB:-target/release/mhdb}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

data=$work/data
mkdir -p "$data/sub"
# Six parts of 20,000 pages of random words; a page's words repeat every 700 pages of its
# part (29 copies each, so the dedup pass stays small and most rows are dropped).
python3 - "$data" <<'PY'
import gzip, random, sys
data = sys.argv[1]
vocab = ["w%d" % n for n in range(5000)]
def text(f, i):
    rng = random.Random(f * 1000 + i % 700)
    return " ".join(rng.choice(vocab) for _ in range(40))
for f in range(6):
    lines = "".join(
        '{"id": "p%d-%d", "text": "%s"}\n' % (f, i, text(f, i)) for i in range(20000)
    ).encode()
    name = ["part-%d.jsonl.zst", "part-%d.jsonl.zst", "sub/part-%d.jsonl.gz", "sub/part-%d.jsonl.gz", "part-%d.jsonl", "part-%d.jsonl"][f] % f
    if name.endswith(".gz"):
        lines = gzip.compress(lines)
    open(f"{data}/{name}", "wb").write(lines)
PY
for z in "$data"/*.zst; do mv "$z" "$z.plain" && zstd -q --rm "$z.plain" -o "$z"; done
"$mhdb" create "$work/idx" --threshold 0.8 >/dev/null 2>&1
"$mhdb" add "$work/idx" "$data" 2>/dev/null
"$mhdb" dedup "$work/idx" --apply "$data" --out "$work/reference" 2>/dev/null
(cd "$work/reference" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$work/want"

left=0
failures=0
out=$work/out
for n in $(seq 1 "$runs"); do
    "$mhdb" dedup "$work/idx" --apply "$data" --out "$out" --overwrite 2>/dev/null &
    pid=$!
    # A random point in the run (about two seconds here: the dedup pass, then the files).
    sleep "$(printf '%d.%03d' $((RANDOM % 3)) $((RANDOM % 1000)))"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    if [ -d "$out" ]; then
        [ -n "$(find "$out" -name '.*.mhdb-partial')" ] && left=$((left + 1))
        while IFS= read -r -d '' f; do
            rel=${f#"$out"/}
            if ! grep -q "  ./$rel\$" "$work/want" ||
                [ "$(sha256sum <"$f" | cut -d' ' -f1)" != "$(grep "  ./$rel\$" "$work/want" | cut -d' ' -f1)" ]; then
                failures=$((failures + 1))
                echo "kill $n: $rel is not the whole file"
            fi
        done < <(find "$out" -type f ! -name '.*' -print0)
    fi
    if ! "$mhdb" dedup "$work/idx" --apply "$data" --out "$out" --overwrite 2>"$work/err"; then
        failures=$((failures + 1))
        echo "kill $n: the rerun failed: $(cat "$work/err")"
    elif ! diff -q <(cd "$out" && find . -type f -print0 | sort -z | xargs -0 sha256sum) "$work/want" >/dev/null; then
        failures=$((failures + 1))
        echo "kill $n: the rerun's files differ from an uninterrupted run's"
    fi
    rm -rf "$out"
done
echo "kills: $runs, temporary files left by the kill: $left, failures: $failures"
[ "$failures" -eq 0 ]
