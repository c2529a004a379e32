#!/usr/bin/env bash
# Kills `mhdb dedup-files` with SIGKILL at random points, N times, over four inputs (two
# JSON Lines zstd files, two Parquet files), and checks after each kill that every file under
# a final name in the output directory is byte for byte the file an uninterrupted run writes
# (so whole, valid, and holding exactly its rows), and that a rerun (--overwrite) writes
# exactly those files and leaves no temporary file. Prints the cycles, how many kills landed
# before the run ended, the temporary files and temporary indexes the kills left, and
# violations. Needs zstd and a Python with pyarrow (PYTHON, default python3).
#
#   cargo build --release && tools/reliability/dedup_files_kill.sh 200 [SEED]
set -euo pipefail

runs=${1:-200}
RANDOM=${2:-1}
mhdb=${MHDB:-target/release/mhdb}
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The temporary indexes of dedup-files go here, where the kills' leftovers can be counted.
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"

data=$work/data
mkdir -p "$data/sub"
# Four parts of 1,500 pages of random words; a page's words repeat every 400 pages across
# all parts (so about 15 copies each, most rows dropped, some kept in every file).
"$python" - "$data" <<'PY'
import json, random, sys
import pyarrow as pa, pyarrow.parquet as pq
data = sys.argv[1]
vocab = ["w%d" % n for n in range(5000)]
def text(f, i):
    rng = random.Random((f * 1500 + i) % 400)
    return " ".join(rng.choice(vocab) for _ in range(40))
for f, name in enumerate(["part-0.jsonl", "sub/part-1.jsonl", "part-2.parquet", "sub/part-3.parquet"]):
    ids = ["p%d-%d" % (f, i) for i in range(1500)]
    texts = [text(f, i) for i in range(1500)]
    if name.endswith(".parquet"):
        pq.write_table(pa.table({"id": ids, "text": texts}), f"{data}/{name}", row_group_size=500)
    else:
        with open(f"{data}/{name}", "w") as out:
            out.writelines(json.dumps({"id": k, "text": t}) + "\n" for k, t in zip(ids, texts))
PY
for j in "$data"/part-0.jsonl "$data"/sub/part-1.jsonl; do zstd -q --rm "$j" -o "$j.zst"; done

digests() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
start=$(now_ms)
"$mhdb" dedup-files "$data" --out "$work/reference" 2>/dev/null
span=$(($(now_ms) - start))
digests "$work/reference" >"$work/want"
# An uninterrupted run writes the same bytes every time (what the checks below rely on).
"$mhdb" dedup-files "$data" --out "$work/again" 2>/dev/null
diff -q <(digests "$work/again") "$work/want" >/dev/null || { echo "two clean runs differ" >&2; exit 1; }
rm -rf "$work/again"

killed=0
partial_left=0
index_left=0
violations=0
out=$work/out
for n in $(seq 1 "$runs"); do
    "$mhdb" dedup-files "$data" --out "$out" --overwrite 2>/dev/null &
    pid=$!
    # A random point in (a little more than) an uninterrupted run's span.
    ms=$((RANDOM * 32768 + RANDOM))
    ms=$((ms % (span * 12 / 10 + 1)))
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
    kill -9 "$pid" 2>/dev/null || true
    status=0
    wait "$pid" 2>/dev/null || status=$?
    [ "$status" -eq 137 ] && killed=$((killed + 1))
    if [ -d "$out" ]; then
        [ -n "$(find "$out" -name '.*.mhdb-partial')" ] && partial_left=$((partial_left + 1))
        while IFS= read -r -d '' f; do
            rel=${f#"$out"/}
            want=$(grep "  ./$rel\$" "$work/want" | cut -d' ' -f1 || true)
            if [ -z "$want" ] || [ "$(sha256sum <"$f" | cut -d' ' -f1)" != "$want" ]; then
                violations=$((violations + 1))
                echo "cycle $n: $rel is not the whole file of a clean run"
            fi
        done < <(find "$out" -type f ! -name '.*' -print0)
    fi
    if [ -n "$(ls -A "$TMPDIR")" ]; then
        index_left=$((index_left + 1))
        rm -rf "${TMPDIR:?}"/*
    fi
    if ! "$mhdb" dedup-files "$data" --out "$out" --overwrite 2>"$work/err"; then
        violations=$((violations + 1))
        echo "cycle $n: the rerun failed: $(cat "$work/err")"
    elif ! diff -q <(digests "$out") "$work/want" >/dev/null; then
        violations=$((violations + 1))
        echo "cycle $n: the rerun's files differ from an uninterrupted run's"
    fi
    rm -rf "$out"
done
echo "cycles: $runs, killed before the end: $killed (run: ${span} ms), temporary files left:" \
    "$partial_left, temporary indexes left: $index_left, violations: $violations"
[ "$violations" -eq 0 ]
