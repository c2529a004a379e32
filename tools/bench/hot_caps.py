#!/usr/bin/env python3
"""What a bucket cap costs in recall, and saves in time, on the hot corpus.

For each cap (0 = none), builds an index of the corpus of tools/bench/hot_corpus.py with
`mhdb create --bucket-cap CAP`, then times `mhdb query --jsonl` of the hot queries and
`mhdb dedup --format pairs`, and counts what each finds against the uncapped index (recall
of the uncapped answer; a cap only removes candidates, so nothing new is found).

    cargo build --release --features cli
    python3 -m tools.bench.hot_caps [--caps 0,10000,1000,300,100] [--threshold 0.5]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

from .hot_bench import timed

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mhdb", default=os.path.join(ROOT, "target/release/mhdb"))
    ap.add_argument("--dir", default="/tmp/mhdb-hot")
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--caps", default="0,10000,3000,1000,300,100")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    corpus = os.path.join(a.dir, "corpus.jsonl")
    queries = corpus + ".queries.jsonl"
    if not os.path.exists(queries):
        subprocess.run([sys.executable, os.path.join(HERE, "hot_corpus.py"), "--pages",
                        str(a.pages), "--out", corpus], check=True)
    caps = [int(c) for c in a.caps.split(",")]
    if caps[0] != 0:
        caps.insert(0, 0)
    base = None
    print(f"t = {a.threshold}; recall = share of the uncapped index's answer found")
    print("| cap | largest bucket (uncapped size) | hot buckets | query --jsonl (s) | matches per query "
          "| query recall | dedup pairs (s) | pairs | pair recall |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for cap in caps:
        db = os.path.join(a.dir, f"caps-{a.threshold}-{cap}")
        shutil.rmtree(db, ignore_errors=True)
        subprocess.run([a.mhdb, "create", db, "--threshold", str(a.threshold), "--bucket-cap",
                        str(cap)], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([a.mhdb, "add", db, corpus], check=True, stdout=subprocess.DEVNULL)
        stats = json.loads(subprocess.run([a.mhdb, "stats", db, "--json"], check=True,
                                          capture_output=True, text=True).stdout)
        best = None
        for _ in range(3):
            wall, _, _, out = timed([a.mhdb, "query", db, "--jsonl", queries, "--threshold",
                                     str(a.threshold)], stdout=subprocess.PIPE)
            if best is None or wall < best[0]:
                best = (wall, out)
        qwall, out = best
        found = {}
        for line in out.splitlines():
            r = json.loads(line)
            found[r["id"]] = {m["id"] for m in r["matches"]}
        # A cap only removes candidates (verification is the same), so the capped pairs are
        # a subset of the uncapped ones: recall is the ratio of the counts.
        pairs_path = db + ".pairs"
        with open(pairs_path, "w") as f:
            dwall, _, _, _ = timed([a.mhdb, "dedup", db, "--threshold", str(a.threshold),
                                    "--format", "pairs"], stdout=f)
        with open(pairs_path, "rb") as f:
            pairs = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
        os.remove(pairs_path)
        if base is None:
            base = (found, pairs)
        q_total = sum(len(v) for v in base[0].values())
        q_hit = sum(len(found.get(k, set()) & v) for k, v in base[0].items())
        largest = max(b["max"] for b in stats["bands"])
        print(f"| {cap or 'none'} | {largest} | {stats['hot_buckets']} "
              f"| {qwall:.2f} | {sum(len(v) for v in found.values()) / max(len(found), 1):.0f} "
              f"| {q_hit / max(q_total, 1):.4f} | {dwall:.1f} | {pairs} "
              f"| {pairs / max(base[1], 1):.4f} |", flush=True)
        shutil.rmtree(db, ignore_errors=True)


if __name__ == "__main__":
    main()
