#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for a bounded time and prints the executions of each.
#   tools/reliability/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]      (default 60 s, every target)
# The working corpus of a target grows in fuzz/corpus/TARGET (not committed); the committed
# seeds in fuzz/seeds/TARGET are read too. A crash leaves its input in fuzz/artifacts/TARGET
# and makes this script exit non-zero.
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly toolchain for the sanitizer
# flags; without one, the stable toolchain is used with RUSTC_BOOTSTRAP=1.
set -uo pipefail
cd "$(dirname "$0")/../../fuzz"
secs="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(current manifest deletions siglog_header wal_replay wal_batch segment model)
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "cargo-fuzz is not installed: cargo install cargo-fuzz" >&2
  exit 1
fi
if rustup run nightly rustc --version >/dev/null 2>&1; then
  toolchain=(+nightly)
else
  echo "no nightly toolchain: using stable with RUSTC_BOOTSTRAP=1" >&2
  toolchain=()
  export RUSTC_BOOTSTRAP=1
fi
cargo "${toolchain[@]}" fuzz build -O || exit 1
status=0
printf '%-14s %12s %10s %8s %s\n' target executions exec/s corpus result
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  log=$(mktemp)
  cargo "${toolchain[@]}" fuzz run -O "$t" "corpus/$t" "seeds/$t" -- \
    -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=4096 >"$log" 2>&1
  rc=$?
  done_line=$(grep -E '^#[0-9]+.*DONE' "$log" | tail -n 1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
  execs=$(grep -oE '^Done [0-9]+ runs' "$log" | grep -oE '[0-9]+' | tail -n 1)
  [ -z "$execs" ] && execs=$(echo "${done_line:-$last}" | grep -oE '^#[0-9]+' | tr -d '#')
  rate=$(echo "${done_line:-$last}" | grep -oE 'exec/s: [0-9]+' | grep -oE '[0-9]+')
  corpus=$(echo "${done_line:-$last}" | grep -oE 'corp: [0-9]+' | grep -oE '[0-9]+')
  if [ $rc -eq 0 ]; then result=ok; else result="FAILED (log: $log)"; status=1; fi
  printf '%-14s %12s %10s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "${corpus:-?}" "$result"
  [ $rc -eq 0 ] && rm -f "$log"
done
exit $status
