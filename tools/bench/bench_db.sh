#!/usr/bin/env bash
# Usage: tools/bench/bench_db.sh [DOCS]   (default 1000000)
# The database harness (benches/db_harness.rs) at a given number of documents, on the disk
# that holds this checkout, with gaoya's in-memory MinHashIndex as the reference.
set -euo pipefail
cd "$(dirname "$0")/../.."
docs=${1:-1000000}
cargo bench --bench db_harness -- --docs "$docs" --queries 10000 --dir "$PWD/target"
