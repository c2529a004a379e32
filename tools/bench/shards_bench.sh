#!/usr/bin/env bash
# Shards against the merged index, through the CLI: the same DOCS documents (default 160,000)
# as 16 shards and as one index made by `mhdb merge`, each compacted. Measures the open (a
# fresh process answering an empty query: open, nothing to look up, exit), `query --jsonl` of
# QUERIES queries on one thread (half edited copies of stored documents, half unrelated), and
# the peak RSS of each. BENCHMARKS.md, "Shards".
#
#   cargo build --release && tools/bench/shards_bench.sh [DOCS] [QUERIES] [DIR]
set -euo pipefail

docs=${1:-160000}
queries=${2:-2000}
dir=${3:-$(mktemp -d /tmp/shards-bench.XXXXXX)}
shards=16
mhdb=${MHDB:-$(cd "$(dirname "$0")/../.." && pwd)/target/release/mhdb}
mkdir -p "$dir"
cd "$dir"

# Documents of 80 words from a 5,000-word vocabulary; every 50th edits its predecessor.
# Written once per DOCS and QUERIES (a rerun in the same directory only measures again).
if [ "$(cat corpus.args 2>/dev/null)" != "$docs $queries" ]; then
# Another size was built here before: its indexes go too.
if [ -f corpus.args ]; then rm -rf merged shard-* part-*; fi
python3 - "$docs" "$queries" <<'EOF'
import json, random, sys
docs, queries = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(7)
vocab = [f"w{i}" for i in range(5000)]
texts = []
with open("corpus.jsonl", "w") as out:
    for i in range(docs):
        if i % 50 == 49:
            words = texts[-1].split()
            words[rng.randrange(len(words))] = "edited"
            text = " ".join(words)
        else:
            text = " ".join(rng.choice(vocab) for _ in range(80))
        texts.append(text)
        out.write(json.dumps({"id": f"doc-{i}", "text": text}) + "\n")
with open("queries.jsonl", "w") as out:
    for q in range(queries):
        if q % 2 == 0:
            words = texts[rng.randrange(docs)].split()
            words[rng.randrange(len(words))] = "changed"
            text = " ".join(words)
        else:
            text = " ".join(rng.choice(vocab) for _ in range(80))
        out.write(json.dumps({"id": q, "text": text}) + "\n")
EOF
echo "$docs $queries" > corpus.args
fi

if [ ! -d merged ]; then
    split -n "l/$shards" -d -a 2 corpus.jsonl part-
    for part in part-*; do
        shard=shard-${part#part-}
        "$mhdb" create "$shard" --threshold 0.8 2>/dev/null
        "$mhdb" add "$shard" "$part" 2>/dev/null
        "$mhdb" compact "$shard" 2>/dev/null
    done
    "$mhdb" merge merged shard-* 2>/dev/null
    "$mhdb" compact merged 2>/dev/null
fi
sync

# "SECONDS MAX_RSS_KB" of one run of mhdb with the given arguments, output discarded.
measure() {
    local start end
    start=$(date +%s%N)
    /usr/bin/time -f "%M" -o rss.txt "$mhdb" "$@" >/dev/null 2>/dev/null
    end=$(date +%s%N)
    echo "$(( (end - start) / 1000 )) $(tail -n 1 rss.txt)"
}

# The median of five runs: "MICROSECONDS MAX_RSS_KB".
median5() {
    for _ in 1 2 3 4 5; do measure "$@"; done | sort -n | sed -n 3p
}

echo "documents $docs in $shards shards; $queries queries; $(nproc) cores; in $dir"
for target in merged shards; do
    if [ "$target" = merged ]; then set -- merged; else set -- shard-*; fi
    read -r open_us open_rss < <(median5 query "$@" --text "")
    export RAYON_NUM_THREADS=1
    read -r all_us all_rss < <(median5 query "$@" --jsonl queries.jsonl)
    unset RAYON_NUM_THREADS
    per_query=$(( (all_us - open_us) / queries ))
    echo "$target: open+exit ${open_us} us, RSS ${open_rss} KB; --jsonl on 1 thread ${all_us} us" \
        "= ${per_query} us per query after the open, peak RSS ${all_rss} KB"
done
