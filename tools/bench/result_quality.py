#!/usr/bin/env python3
"""Result quality at the threshold, and top-k, on a boilerplate-heavy corpus (issue 15).

Usage:  python3 -m tools.bench.result_quality [--pages 10000] [--body-messages 6-90] [--work /tmp/rq]
        [--seeds 0,1,2,3]
        [--threshold 0.8] [--configs NAME,...] [--store-sets] [--topk-queries 400]
        [--skip-topk] [--skip-quality]

1. Builds the corpus with `tools/bench/hot_corpus.py` (10,000 pages in 25 languages from the
   machine's gettext catalogs and license texts, 80 % one templated reference family whose
   page bodies are 6 to 90 messages long, so that the family's similarities spread from
   about 0.3 to 0.95 with many pairs near the threshold), unless it is already in --work.
2. Computes the exact Jaccard of every pair with J >= T - 0.05 from the shingle-hash sets mhdb
   itself computes (`cargo bench --bench result_quality -- pairs`: AllPairs with
   prefix filtering).
3. For every configuration (create flags) and every hash seed: `mhdb create`, `add`,
   `dedup --threshold T`, and scores the reported pairs: recall over pairs with J >= T + 0.05,
   precision counting pairs with J >= T - 0.05 as right, and the strict recall and precision
   at T. Then `compact` and the bytes per document of the whole index directory; then query
   latency (library, one thread, signing excluded: `result_quality -- latency`, second of two
   passes) of --topk-queries documents drawn from the corpus.
   `--store-sets` adds configurations that store shingle sets (`mhdb create --store-sets`,
   exact re-rank), when this build has that flag.
4. Top-k: `mhdb query --top 10 --jsonl` on the default configuration against brute-force
   top-10 by exact Jaccard (ties by key, floor 0.3): recall@10 (key overlap), and recall@10
   counting a found document right when its exact J reaches that of the true 10th (ties).
"""

import argparse
import functools
import json
import random
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
MHDB = ROOT / "target" / "release" / "mhdb"


@functools.cache
def truth_bin():
    """The path of benches/result_quality.rs's binary (ground truth and latency), built first."""
    out = subprocess.run(["cargo", "bench", "--quiet", "--bench", "result_quality", "--no-run",
                          "--message-format=json"], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
                and msg["target"]["name"] == "result_quality":
            return Path(msg["executable"])
    sys.exit("cargo built no result_quality bench binary")

# name -> `mhdb create` flags (besides --threshold and --seed). "default" is whatever this
# build's defaults are.
CONFIGS = {
    "default": [],
    "k128-b32 (old default)": ["--perms", "128", "--bits", "32"],
    "kv256-kb128-b16": ["--perms", "256", "--band-slots", "128", "--bits", "16"],
    "kv256-kb128-b8": ["--perms", "256", "--band-slots", "128", "--bits", "8"],
    "kv512-kb128-b8": ["--perms", "512", "--band-slots", "128", "--bits", "8"],
    "kv512-kb128-b4": ["--perms", "512", "--band-slots", "128", "--bits", "4"],
    "kv1024-kb128-b4": ["--perms", "1024", "--band-slots", "128", "--bits", "4"],
    "kv1024-kb128-b8": ["--perms", "1024", "--band-slots", "128", "--bits", "8"],
    # Exact re-rank from stored shingle sets (bands re-tuned for P(t) >= 0.99).
    "store-sets": ["--store-sets"],
}


def run(args, **kw):
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True, **kw)


def load_truth(path, n, lo):
    """{i * n + j: J} of the pairs with J >= lo."""
    truth = {}
    data = Path(path).read_bytes()
    for i, j, jac in struct.iter_unpack("<IIf", data):
        if jac >= lo:
            truth[i * n + j] = jac
    return truth


def score(found, truth, n, t):
    """recall(J >= t+0.05), precision(J >= t-0.05 right), strict recall and precision at t."""
    high = [p for p, j in truth.items() if j >= t + 0.05 - 1e-6]
    at_t = [p for p, j in truth.items() if j >= t - 1e-6]
    near = t - 0.05 - 1e-6
    return (
        sum(1 for p in high if p in found) / max(1, len(high)),
        sum(1 for p in found if truth.get(p, 0) >= near) / max(1, len(found)),
        sum(1 for p in at_t if p in found) / max(1, len(at_t)),
        sum(1 for p in found if truth.get(p, 0) >= t - 1e-6) / max(1, len(found)),
    )


def slug(name):
    return "".join(c if c.isalnum() else "-" for c in name)


def dir_bytes(path):
    return sum(f.stat().st_size for f in Path(path).iterdir() if f.is_file())


def quality(a, work, corpus, ids, queries, truth, configs):
    n = len(ids)
    t = a.threshold
    print(f"\n## t = {t}: {sum(1 for j in truth.values() if j >= t + 0.05 - 1e-6):,} pairs with "
          f"J >= {t + 0.05:.2f}, {sum(1 for j in truth.values() if j >= t - 1e-6):,} with J >= {t}\n")
    print("| configuration | seed | pairs reported | recall (J >= t+0.05) | precision (J >= t-0.05 "
          "right) | strict recall | strict precision | bytes/doc (signature) | bytes/doc (index) "
          "| query p50 / p90 (µs) | dedup (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    summary = {}
    for name, flags in configs.items():
        rows = []
        for seed in a.seeds:
            db = work / f"db-{slug(name)}-{seed}"
            run(["rm", "-rf", db])
            created = json.loads(run([MHDB, "create", db, "--threshold", t, "--seed", seed,
                                      "--json", *flags]).stdout)
            p = created["params"]
            run([MHDB, "add", db, corpus])
            t0 = time.perf_counter()
            out = run([MHDB, "dedup", db, "--threshold", t]).stdout
            dedup_s = time.perf_counter() - t0
            found = set()
            for line in out.splitlines():
                pr = json.loads(line)
                x, y = ids[pr["a"]], ids[pr["b"]]
                found.add(min(x, y) * n + max(x, y))
            r = score(found, truth, n, t)
            run([MHDB, "compact", db])
            per_doc = dir_bytes(db) / n
            lat = json.loads(run([truth_bin(), "latency", db, queries]).stdout)
            sig = p["perms"] * p["bits"] // 8
            rows.append(r)
            print(f"| {name} ({p['perms']}/{p.get('band_slots', p['perms'])} slots, "
                  f"{p['bands']}×{p['rows']}, {p['bits']} bits) | {seed} | {len(found):,} | "
                  f"{r[0]:.4f} | {r[1]:.4f} | {r[2]:.4f} | {r[3]:.4f} | {sig} | {per_doc:,.0f} | "
                  f"{lat['p50_us']:,.0f} / {lat['p90_us']:,.0f} | {dedup_s:.1f} |", flush=True)
            if not a.keep_dbs and not (name == "default" and seed == a.seeds[0]):
                run(["rm", "-rf", db])
        summary[name] = [min(c) for c in zip(*rows)]
    print("\nWorst seed per configuration (recall, precision, strict recall, strict precision):\n")
    for name, worst in summary.items():
        print(f"- {name}: " + ", ".join(f"{v:.4f}" for v in worst))


def topk(a, work, corpus, queries, k=10):
    truth_path = work / "topk-truth.jsonl"
    if not truth_path.exists():
        with open(truth_path, "w") as f:
            subprocess.run([truth_bin(), "topk", corpus, queries, "100", "0.3"], check=True, stdout=f)
    truth = {}
    for line in open(truth_path):
        r = json.loads(line)
        truth[r["id"]] = r["top"]
    db = work / f"db-{slug(a.topk_config)}-{a.seeds[0]}"
    if not db.exists():
        run([MHDB, "create", db, "--threshold", a.threshold, "--seed", a.seeds[0],
             *CONFIGS[a.topk_config]])
        run([MHDB, "add", db, corpus])
        run([MHDB, "compact", db])
    t0 = time.perf_counter()
    out = run([MHDB, "query", db, "--top", k, "--jsonl", queries]).stdout
    wall = time.perf_counter() - t0
    lat = json.loads(run([truth_bin(), "latency", db, queries, k]).stdout)
    strict = tied = 0.0
    counted = 0
    band_only = 0
    for line in out.splitlines():
        r = json.loads(line)
        top = truth[r["id"]]
        want = top[:k]
        if not want:
            continue
        exact = {key: j for key, j in top}
        kth = want[-1][1]
        got = [m["id"] for m in r["matches"]]
        strict += len(set(got) & {key for key, _ in want}) / len(want)
        tied += min(len(want), sum(1 for g in got if exact.get(g, 0) >= kth - 1e-9)) / len(want)
        counted += 1
        band_only += r["verified"] == r["candidates"]
    print(f"\n## Top-{k} (floor 0.3), {counted} queries drawn from the corpus, {a.topk_config}, "
          f"seed {a.seeds[0]}\n")
    print(f"- recall@{k} against brute-force top-{k} by exact Jaccard (ties by key): "
          f"**{strict / counted:.4f}**")
    print(f"- recall@{k} counting a document tied with the true {k}th as right: {tied / counted:.4f}")
    print(f"- `mhdb query --top {k} --jsonl` wall time: {wall:.2f} s for {counted} queries; library "
          f"p50 {lat['p50_us']:,.0f} µs, p90 {lat['p90_us']:,.0f} µs, mean {lat['mean_us']:,.0f} µs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=10000)
    ap.add_argument("--body-messages", default="6-90",
                    help="hot_corpus.py --body-messages: the spread of the family pages' bodies")
    ap.add_argument("--work", type=Path, default=Path("/tmp/rq"))
    ap.add_argument("--seeds", default="0,1,2,3")
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--configs", default="", help="comma-separated names (default: all)")
    ap.add_argument("--store-sets", action="store_true",
                    help="also score configurations with stored shingle sets (exact re-rank)")
    ap.add_argument("--topk-queries", type=int, default=400)
    ap.add_argument("--skip-topk", action="store_true")
    ap.add_argument("--topk-config", default="default", help="the configuration top-k runs on")
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--keep-dbs", action="store_true")
    a = ap.parse_args()
    a.seeds = [int(s) for s in a.seeds.split(",")]
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "mhdb"], cwd=ROOT, check=True)
    truth_bin()
    work = a.work
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "hot.jsonl"
    if not corpus.exists():
        subprocess.run([sys.executable, ROOT / "tools" / "bench" / "hot_corpus.py", "--pages", str(a.pages),
                        "--body-messages", a.body_messages, "--out", corpus, "--queries", "0"],
                       check=True)
    docs = [json.loads(line)["id"] for line in open(corpus)]
    ids = {key: i for i, key in enumerate(docs)}
    queries = work / "queries.jsonl"
    if not queries.exists():
        picks = set(random.Random(5).sample(range(len(docs)), min(a.topk_queries, len(docs))))
        with open(corpus) as src, open(queries, "w") as q:
            for i, line in enumerate(src):
                if i in picks:
                    q.write(line)
    lowest = round(a.threshold - 0.05, 2)
    pairs = work / f"pairs-{lowest}.bin"
    if not pairs.exists():
        subprocess.run([truth_bin(), "pairs", corpus, str(lowest), pairs], check=True)
    configs = CONFIGS
    if a.configs:
        configs = {k: CONFIGS[k] for k in a.configs.split(",")}
    if a.store_sets:
        if "--store-sets" in run([MHDB, "create", "--help"]).stdout:
            configs = dict(configs)
            configs["default + --store-sets"] = ["--store-sets"]
        else:
            print("(this build has no `create --store-sets`: exact re-rank not scored)")
    if not a.skip_quality:
        truth = load_truth(pairs, len(docs), a.threshold - 0.05 - 1e-6)
        quality(a, work, corpus, ids, queries, truth, configs)
    if not a.skip_topk:
        topk(a, work, corpus, queries)


if __name__ == "__main__":
    main()
