#!/usr/bin/env python3
"""Result quality at the threshold with and without exact re-rank (issue 15), on real text.

Builds a boilerplate-heavy multilingual corpus (tools/bench/hot_corpus.py: generated reference pages
sharing their site chrome and license text, in 25 languages) and computes its exact ground truth
(every pair with Jaccard >= the lowest threshold less 0.05, by prefix filtering over character
5-gram sets after mhdb's normalization; tools/bench/quality.py). Then, for each threshold and hash
seed, it builds two indexes of the corpus, with the default settings and with `--store-sets`,
runs `mhdb dedup`, and scores the pairs:

* recall over pairs with J >= t + 0.05, precision counting pairs with J >= t - 0.05 as right
  (the issue's "J >= 0.85" and "J >= 0.75" at t = 0.8);
* strict recall and strict precision at t;

and reports bytes per document (the index directory), bytes per stored shingle value, and the
dedup time.

    cargo build --release
    python3 -m tools.bench.rerank_quality [--pages 3000] [--seeds 0 1 2 3] [--thresholds 0.8 0.5]

Query latency with and without the re-rank is `cargo bench --bench rerank_query` (run on the
databases this script keeps with `--keep DIR`).
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .quality import exact_pairs, shingles

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

MHDB = ROOT / "target" / "release" / "mhdb"


def run(args):
    return subprocess.run([str(MHDB), *map(str, args)], check=True, capture_output=True, text=True)


def dir_bytes(path):
    return sum(p.stat().st_size for p in Path(path).iterdir() if p.is_file())


def score(found, truth, t):
    high = [p for p, j in truth.items() if j >= t + 0.05]
    at_t = [p for p, j in truth.items() if j >= t]
    n = max(1, len(found))
    return {
        "pairs": len(found),
        "recall_high": sum(1 for p in high if p in found) / max(1, len(high)),
        "precision_loose": sum(1 for p in found if truth.get(p, 0) >= t - 0.05) / n,
        "recall_strict": sum(1 for p in at_t if p in found) / max(1, len(at_t)),
        "precision_strict": sum(1 for p in found if truth.get(p, 0) >= t) / n,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=3000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    ap.add_argument("--thresholds", type=float, nargs="+", default=[0.8, 0.5])
    ap.add_argument("--keep", type=Path, help="keep the corpus and databases here")
    a = ap.parse_args()
    if not MHDB.exists():
        sys.exit(f"{MHDB} missing: run `cargo build --release` first")
    work = a.keep or Path(tempfile.mkdtemp(prefix="mhdb-rerank-"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "corpus.jsonl"
    if not corpus.exists():
        subprocess.run([sys.executable, str(HERE / "hot_corpus.py"), "--pages", str(a.pages),
                        "--out", str(corpus)], check=True, capture_output=True)
    docs = [(d["id"], d["text"]) for d in map(json.loads, open(corpus, encoding="utf-8"))]
    ids = {k: i for i, (k, _) in enumerate(docs)}
    t0 = time.time()
    truth = exact_pairs(docs, t=min(a.thresholds) - 0.05)
    shingle_count = sum(len(shingles(t)) for _, t in docs)
    mb = sum(len(t.encode()) for _, t in docs) / 1e6
    print(f"corpus: {len(docs)} pages, {mb:.1f} MB, {shingle_count / len(docs):.0f} distinct "
          f"shingles per page; {len(truth)} pairs with J >= {min(a.thresholds) - 0.05:.2f} "
          f"(ground truth in {time.time() - t0:.0f} s)")
    print()
    print("| t | settings | seed | pairs | recall J>=t+0.05 | precision J>=t-0.05 | strict recall | "
          "strict precision | bytes/doc | dedup s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for t in a.thresholds:
        for sets in (False, True):
            label = "--store-sets" if sets else "default"
            for seed in a.seeds:
                db = work / f"t{t}-{'sets' if sets else 'plain'}-s{seed}.db"
                if db.exists():
                    shutil.rmtree(db)
                run(["create", db, "--threshold", t, "--seed", seed, *(["--store-sets"] if sets else [])])
                run(["add", db, corpus])
                run(["compact", db])
                start = time.perf_counter()
                out = run(["dedup", db, "--threshold", t]).stdout
                took = time.perf_counter() - start
                found = {}
                for line in out.splitlines():
                    p = json.loads(line)
                    x, y = ids[p["a"]], ids[p["b"]]
                    found[(min(x, y), max(x, y))] = p["jaccard"]
                s = score(found, truth, t)
                size = dir_bytes(db)
                s["bytes_per_doc"] = size / len(docs)
                s["seconds"] = took
                summary.setdefault((t, sets), []).append(s)
                print(f"| {t} | {label} | {seed} | {s['pairs']} | {s['recall_high']:.4f} | "
                      f"{s['precision_loose']:.4f} | {s['recall_strict']:.4f} | "
                      f"{s['precision_strict']:.4f} | {s['bytes_per_doc']:.0f} | {took:.2f} |",
                      flush=True)
        plain = summary[(t, False)]
        with_sets = summary[(t, True)]
        extra = sum(s["bytes_per_doc"] for s in with_sets) / len(with_sets) - \
            sum(s["bytes_per_doc"] for s in plain) / len(plain)
        print(f"| {t} | stored sets cost | | | | | | | {extra:.0f} "
              f"(= {extra * len(docs) / shingle_count:.2f} B per distinct shingle) | |")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
