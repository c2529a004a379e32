#!/usr/bin/env bash
# kill -9 torture by hand: CYCLES cycles (default 1000) of a writer killed with SIGKILL and a
# check of what survived against the acknowledged writes (tests/kill_torture.rs says how).
# Prints "kills survived / kills" and the losses; exits non-zero on any loss.
#   tools/reliability/torture.sh [CYCLES] [SEED]
set -euo pipefail
cd "$(dirname "$0")/../.."
export MHDB_TORTURE_CYCLES="${1:-1000}"
export MHDB_TORTURE_SEED="${2:-1}"
exec cargo test --release --test kill_torture -- --exact kill_nine_torture
