#!/usr/bin/env bash
# SimHash measurements for BENCHMARKS.md ("SimHash index"): builds two real-text corpora with
# tools/bench/hot_corpus.py (the boilerplate-heavy multilingual pages, and free pages only: long
# multilingual texts with edited copies), then runs
#   - benches/simhash_quality: recall / precision of d <= H against the exact cosine of the
#     same weighted features, on graded word edits ("same content, different words") of the
#     sample corpus and of the free pages, tf and logtf weights;
#   - benches/simhash_harness: the index on disk (warm and cold queries, bucket caps, bucket
#     hotness at 16-bit blocks) against gaoya's SimHashIndex in the same run.
# Usage: tools/bench/simhash_bench.sh [WORKDIR]   (default /tmp/shbench; about 10 minutes)
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/shbench}
mkdir -p "$work"
[ -s "$work/hot100k.jsonl" ] || python3 -m tools.bench.hot_corpus --pages 100000 --out "$work/hot100k.jsonl"
[ -s "$work/free20k.jsonl" ] || python3 -m tools.bench.hot_corpus --pages 20000 --family-share 0 --out "$work/free20k.jsonl"
for w in tf logtf; do
  cargo bench --bench simhash_quality -- --weights "$w"
  cargo bench --bench simhash_quality -- --weights "$w" --corpus "$work/free20k.jsonl"
done
cargo bench --bench simhash_harness -- --corpus "$work/hot100k.jsonl" --queries 1000 --caps 10000,1000,0 --dir "$work/idx"
cargo bench --bench simhash_harness -- --corpus "$work/free20k.jsonl" --pad 1000000 --queries 1000 --caps 10000 --dir "$work/idx"
