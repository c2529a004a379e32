#!/usr/bin/env bash
# Runs two mhdb binaries on the same inputs and compares everything a user sees or ships: each
# command's stdout and exit code, the files of every index built (segment, manifest, deletion
# list and WAL bytes), and the answers on the committed format fixtures. For a change that must
# not change behaviour (a refactor): any difference is printed and the exit code is 1.
#
#   tools/conformance/same_answers.sh OLD_BIN NEW_BIN CORPUS.jsonl QUERIES.jsonl [WORK_DIR]
#
# A corpus: `python3 -m tools.bench.hot_corpus --pages 100000 --family-share 0.1
# --out /tmp/same/corpus.jsonl --queries 500` (100,000 pages in 25 languages, CJK among them).
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
old=$1 new=$2 corpus=$3 queries=$4
work=${5:-$(mktemp -d)}
root=$(cd "$(dirname "$0")/../.." && pwd)

# Runs `BIN ARGS...` with stdout to OUT and the exit code appended to it; stderr is kept apart
# (its wording may change, e.g. progress and timing), but not its presence of errors.
run() {
  local out=$1; shift
  set +e
  "$@" > "$out" 2> "$out.stderr"
  echo "exit $?" >> "$out"
  set -e
}

# The index files' bytes, by name.
digest_files() {
  (cd "$1" && find . -type f ! -name LOCK -print0 | sort -z | xargs -0 sha256sum) > "$2"
}

one() {
  local bin=$1 dir=$2
  rm -rf "$dir" && mkdir -p "$dir"
  # A MinHash index (the default), one with stored sets, and a SimHash one.
  for kind in minhash sets simhash; do
    local idx=$dir/$kind
    case $kind in
      minhash) run "$dir/$kind.create" "$bin" create "$idx" --json ;;
      sets) run "$dir/$kind.create" "$bin" create "$idx" --store-sets --json ;;
      simhash) run "$dir/$kind.create" "$bin" create "$idx" --kind simhash --json ;;
    esac
    run "$dir/$kind.add" "$bin" add "$idx" "$corpus" --json --commit-every 20000
    run "$dir/$kind.query" "$bin" query "$idx" --jsonl "$queries"
    run "$dir/$kind.top" "$bin" query "$idx" --jsonl "$queries" --top 5
    for format in pairs clusters drop; do
      run "$dir/$kind.dedup-$format" "$bin" dedup "$idx" --format "$format"
    done
    digest_files "$idx" "$dir/$kind.files"
    run "$dir/$kind.compact" "$bin" compact "$idx"
    digest_files "$idx" "$dir/$kind.files-compacted"
    run "$dir/$kind.stats" "$bin" stats "$idx" --json
    run "$dir/$kind.verify" "$bin" verify "$idx"
  done
  # The committed fixtures, read from copies (a writer's open may tidy a directory).
  for fixture in db-v1 db-v2 db-v2-sets; do
    cp -r "$root/tests/golden/$fixture" "$dir/$fixture"
    run "$dir/$fixture.keys" "$bin" keys "$dir/$fixture"
    run "$dir/$fixture.query" "$bin" query "$dir/$fixture" --jsonl "$queries"
    run "$dir/$fixture.dedup" "$bin" dedup "$dir/$fixture" --format pairs
    run "$dir/$fixture.verify" "$bin" verify "$dir/$fixture"
  done
}

# Both run in the same directory, so that outputs naming paths compare equal.
rm -rf "$work/old" "$work/new"
one "$old" "$work/run" && mv "$work/run" "$work/old"
one "$new" "$work/run" && mv "$work/run" "$work/new"
status=0
for f in "$work"/old/*; do
  name=${f##*/}
  [ -f "$f" ] || continue
  case $name in *.stderr) continue ;; esac
  if ! cmp -s "$f" "$work/new/$name"; then
    echo "DIFFERS: $name"; diff "$f" "$work/new/$name" | head -n 5
    status=1
  fi
done
count=$(find "$work/old" -maxdepth 1 -type f ! -name '*.stderr' | wc -l)
[ "$status" = 0 ] && echo "same answers: $count outputs identical ($work)"
exit "$status"
