#!/usr/bin/env python3
"""The hot-corpus harness: mhdb beside gaoya on boilerplate-heavy multilingual pages, in one run.

Builds the corpus of tools/hot_corpus.py, then for each threshold (0.5 and 0.8):

* `mhdb create` + `mhdb add` of the corpus (wall, user CPU, peak RSS);
* the library's hot queries (benches/hot_query.rs: ns per unique candidate, signing excluded);
* `mhdb query --jsonl` of the hot queries (pages of the boilerplate family), signing included,
  beside gaoya's `MinHashStringIndex.query` on the same texts (in memory, char 5-grams,
  lowercased, bands × rows as mhdb's), with the matches each finds;
* `mhdb dedup` in the three formats (wall, peak RSS).

    python3 -m venv /tmp/hotvenv && /tmp/hotvenv/bin/pip install gaoya
    cargo build --release --features cli
    python3 tools/hot_bench.py --python /tmp/hotvenv/bin/python [--mhdb target/release/mhdb]

`--baseline PATH` also times a second mhdb binary (an older build) on the same databases.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

GAOYA = r"""
import json, sys, time
from gaoya.minhash import MinHashStringIndex
corpus, queries, t, bands, rows = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
REPEATS = int(sys.argv[6])
docs = [json.loads(l) for l in open(corpus, encoding="utf-8")]
qs = [json.loads(l)["text"] for l in open(queries, encoding="utf-8")]
index = MinHashStringIndex(hash_size=32, jaccard_threshold=t, num_bands=bands, band_size=rows,
                           analyzer="char", lowercase=True, ngram_range=(5, 5), id_container="vec")
t0 = time.perf_counter()
index.par_bulk_insert_docs(list(range(len(docs))), [d["text"] for d in docs])
insert = time.perf_counter() - t0
query = None
for _ in range(REPEATS):
    t0 = time.perf_counter()
    matches = sum(len(index.query(q)) for q in qs)
    took = time.perf_counter() - t0
    query = took if query is None else min(query, took)
print(json.dumps({"insert_s": insert, "query_s": query, "matches": matches, "queries": len(qs)}))
"""


def timed(cmd, stdout=subprocess.DEVNULL):
    """Runs `cmd`: (wall s, user s, peak RSS MB, stdout text or None), the wall time from the
    monotonic clock and the rest from the child's own resource usage (wait4), so that runs of a
    tenth of a second are timed to the microsecond rather than to /usr/bin/time's 10 ms."""
    # PIPE: captured and returned; an open file: written there; DEVNULL: dropped.
    out = tempfile.TemporaryFile() if stdout == subprocess.PIPE else stdout
    err = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=out, stderr=err)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        err.seek(0)
        sys.exit(f"{' '.join(cmd)} failed:\n{err.read().decode(errors='replace')}")
    text = None
    if stdout == subprocess.PIPE:
        out.seek(0)
        text = out.read().decode()
    return wall, usage.ru_utime, usage.ru_maxrss / 1024, text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mhdb", default=os.path.join(ROOT, "target/release/mhdb"))
    ap.add_argument("--baseline", help="an older mhdb binary to time beside it")
    ap.add_argument("--python", default=sys.executable, help="a Python with gaoya installed")
    ap.add_argument("--dir", default="/tmp/mhdb-hot")
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--thresholds", default="0.5,0.8")
    ap.add_argument("--skip-pairs", action="store_true", help="skip dedup --format pairs")
    ap.add_argument("--repeats", type=int, default=5,
                    help="runs of each query batch (mhdb's query --jsonl and gaoya's loop); the fastest counts")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    corpus = os.path.join(a.dir, "corpus.jsonl")
    queries = corpus + ".queries.jsonl"
    subprocess.run([sys.executable, os.path.join(HERE, "hot_corpus.py"), "--pages", str(a.pages),
                    "--out", corpus], check=True)
    mb = os.path.getsize(corpus) / 1e6
    binaries = [("mhdb", a.mhdb)] + ([("baseline", a.baseline)] if a.baseline else [])
    for t in [float(x) for x in a.thresholds.split(",")]:
        db = os.path.join(a.dir, f"db-{t}")
        shutil.rmtree(db, ignore_errors=True)
        subprocess.run([a.mhdb, "create", db, "--threshold", str(t), "--json"], check=True,
                       stdout=subprocess.DEVNULL)
        wall, user, rss, _ = timed([a.mhdb, "add", db, corpus])
        params = json.loads(subprocess.run([a.mhdb, "stats", db, "--json"], check=True,
                                           capture_output=True, text=True).stdout)["params"]
        bands, rows = params["bands"], params["rows"]
        print(f"\n## t = {t}: {bands} bands x {rows} rows, {a.pages} pages, {mb:.1f} MB")
        print(f"add: {wall:.2f} s wall, {user:.2f} s user ({mb / wall:.0f} MB/s; "
              f"{mb / max(user, 1e-9):.0f} MB/s per core of user CPU), {rss:.0f} MB peak RSS")
        bench = subprocess.run(
            ["cargo", "bench", "-q", "--bench", "hot_query", "--", "--db", db, "--queries", queries,
             "--passes", "5"], cwd=ROOT, capture_output=True, text=True)
        for line in bench.stdout.splitlines():
            print(f"library: {line}")
        g = subprocess.run([a.python, "-c", GAOYA, corpus, queries, str(t), str(bands), str(rows),
                            str(a.repeats)],
                           capture_output=True, text=True)
        if g.returncode != 0:
            print(f"gaoya failed: {g.stderr.strip().splitlines()[-1:]}")
            gaoya = None
        else:
            gaoya = json.loads(g.stdout)
            print(f"gaoya MinHashStringIndex: insert {gaoya['insert_s']:.2f} s; "
                  f"{gaoya['queries']} queries {gaoya['query_s']:.3f} s, "
                  f"{gaoya['matches'] / gaoya['queries']:.0f} matches per query")
        for name, exe in binaries:
            best = None
            for _ in range(a.repeats):
                wall, user, rss, out = timed([exe, "query", db, "--jsonl", queries,
                                              "--threshold", str(t)], stdout=subprocess.PIPE)
                if best is None or wall < best[0]:
                    best = (wall, user, rss, out)
            wall, user, rss, out = best
            answers = [json.loads(line) for line in out.splitlines()]
            found = sum(len(r["matches"]) for r in answers)
            cands = sum(r["candidates"] for r in answers) / max(len(answers), 1)
            ratio = f", {gaoya['query_s'] / wall:.1f}x gaoya" if gaoya else ""
            print(f"{name} query --jsonl: {len(answers)} queries {wall:.3f} s wall "
                  f"({user:.3f} s user), {found / max(len(answers), 1):.0f} matches and "
                  f"{cands:.0f} candidates per query{ratio}")
        for name, exe in binaries:
            for fmt in ["pairs", "clusters", "drop"]:
                if fmt == "pairs" and a.skip_pairs:
                    continue
                out_path = os.path.join(a.dir, f"dedup-{name}-{t}-{fmt}")
                with open(out_path, "w") as f:
                    wall, user, rss, _ = timed([exe, "dedup", db, "--threshold", str(t),
                                                "--format", fmt], stdout=f)
                with open(out_path, "rb") as f:
                    lines = sum(1 for _ in f)
                print(f"{name} dedup --format {fmt}: {wall:.2f} s wall, {user:.2f} s user, "
                      f"{rss:.0f} MB peak RSS, {lines} lines")


if __name__ == "__main__":
    main()
