#!/usr/bin/env bash
# One database at the default shape at each size (default 10^6, 10^7 and 10^8 documents), each
# measured by benches/scale_harness.rs and removed before the next; then the table and the
# chart of BENCHMARKS.md, "At scale" (benchmarks/scale.svg, drawn from benchmarks/scale.jsonl).
# A size the disk cannot hold (its largest merge keeps its inputs beside its output) is
# skipped with the reason, and the chart projects it.
#
#   tools/bench/scale_run.sh [DIR] [SIZE...]     (DIR defaults to target/scale)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/target/scale}
shift || true
sizes=${*:-1000000 10000000 100000000}
chunk=1000000
mkdir -p "$dir"
results=$dir/results.jsonl
cd "$root"
cargo bench --bench scale_harness --no-run
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +)
per_doc=400 # bytes per document at the default shape, until a run measures it
for n in $sizes; do
    # Segments of one size class merge four at a time, so the largest merge writes
    # chunk * 4^j documents while its inputs stay until it is done.
    largest=$chunk
    while ((largest * 4 <= n)); do largest=$((largest * 4)); done
    peak=$((2 * largest > n ? 2 * largest : n))
    need=$((peak * per_doc + (2 << 30)))
    avail=$(df --output=avail -B1 "$dir" | tail -1)
    if ((avail < need)); then
        echo "scale_run: $n documents need about $((need >> 30)) GiB free in $dir, $((avail >> 30)) GiB are; skipped" >&2
        continue
    fi
    echo "scale_run: $n documents (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    cargo bench --bench scale_harness -- --docs "$n" --chunk "$chunk" --dir "$dir" \
        --json "$results" --commit "$commit"
    per_doc=$(python3 -c 'import json,sys; print(int(json.loads(sys.stdin.readlines()[-1])["bytes_per_doc"]) + 1)' <"$results")
done
# The results behind the chart are kept beside it, so that it can be redrawn.
cp "$results" benchmarks/scale.jsonl
python3 -m tools.bench.scale_chart benchmarks/scale.jsonl --svg benchmarks/scale.svg
