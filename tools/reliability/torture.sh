#!/usr/bin/env bash
# kill -9 torture by hand: CYCLES cycles (default 1000) of a writer killed with SIGKILL and a
# check of what survived against the acknowledged writes (tests/kill_torture.rs says how).
# Prints "kills survived / kills" and the losses; exits non-zero on any loss. VICTIM, when
# given, makes every cycle's victim the one whose name contains it (e.g. serve, novel, add).
#   tools/reliability/torture.sh [CYCLES] [SEED] [VICTIM]
set -euo pipefail
cd "$(dirname "$0")/../.."
export MHDB_TORTURE_CYCLES="${1:-1000}"
export MHDB_TORTURE_SEED="${2:-1}"
if [ -n "${3:-}" ]; then export MHDB_TORTURE_VICTIM="$3"; fi
exec cargo test --release --test kill_torture -- --exact kill_nine_torture
