#!/usr/bin/env bash
# mhdb's main job on the corpus shipped in samples/: build an index, add the corpus, query it
# with edited copies of a few articles, list the near-duplicates it holds, print stats, and
# write the corpus again without its near-duplicates in one command.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
mhdb=target/release/mhdb
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db="$work/idx"

echo "== mhdb create"
$mhdb create "$db" --threshold 0.8
echo "== mhdb add samples/corpus.jsonl"
$mhdb add "$db" samples/corpus.jsonl --json | tail -n 1
echo "== mhdb query --jsonl samples/queries.jsonl (edited copies of three articles, one unrelated text)"
$mhdb query "$db" --jsonl samples/queries.jsonl
echo "== mhdb dedup --format clusters (first 5)"
$mhdb dedup "$db" --format clusters | head -n 5
echo "== mhdb stats"
$mhdb stats "$db"
echo "== mhdb verify"
$mhdb verify "$db"
echo "== mhdb dedup-files samples/corpus.jsonl --out DIR (the whole job in one command)"
$mhdb dedup-files samples/corpus.jsonl --out "$work/deduped"
wc -l samples/corpus.jsonl "$work/deduped/corpus.jsonl"
