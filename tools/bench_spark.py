#!/usr/bin/env python3
"""mhdb.spark in Spark local mode against the single-machine `mhdb` CLI, on the same messy
multilingual corpus (python/tests/messy_corpus.py), in the same run.

Usage:  python tools/bench_spark.py [--docs N] [--master local[2]] [--repeat R]

Run it with a Python that has `pip install './python[spark]'` (and Java 17+). It times:
- `mhdb create` + `mhdb add` (one machine) vs `mhdb.spark.build_shards` (2 shards) + `merge`;
- `mhdb dedup --format pairs` vs `mhdb.spark.dedup` (pairs, components and keep), the first
  Spark run cold (JVM and Python workers starting) and the others warm;
and checks that both find the same pairs. Wall-clock seconds, best of --repeat for warm runs.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python" / "tests"))

import messy_corpus  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import mhdb  # noqa: E402
from mhdb import spark as mspark  # noqa: E402

MHDB = ROOT / "target" / "release" / "mhdb"


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MHDB), *map(str, args)], check=True, capture_output=True, text=True)


def timed(f):  # noqa: ANN001, ANN201
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not MHDB.exists():
        subprocess.run(["cargo", "build", "--release", "--bin", "mhdb"], cwd=ROOT, check=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-spark-"))
    try:
        docs = messy_corpus.build(args.docs)
        create = ["--threshold", "0.7", "--seed", "7", "--bucket-cap", "8"]
        idx = work / "idx"
        cli("create", idx, *create)
        with mhdb.Index.open(idx, read_only=True) as i:
            params = i.params
            sigs = i.hasher.sketch_many([d["text"] for d in docs])
        shingled = ~np.all(sigs == np.uint64(2**64 - 1), axis=1)
        corpus = work / "corpus.jsonl"
        messy_corpus.write_jsonl([d for d, s in zip(docs, shingled) if s], corpus)
        mb = corpus.stat().st_size / 1e6
        add_s, _ = timed(lambda: cli("add", idx, corpus))
        dedup_s = min(timed(lambda: cli("dedup", idx, "--format", "pairs"))[0] for _ in range(args.repeat))
        ref = {
            (p["a"], p["b"])
            for p in map(json.loads, cli("dedup", idx, "--format", "pairs").stdout.splitlines())
        }

        spark = (
            SparkSession.builder.master(args.master)
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        df = spark.createDataFrame(pd.DataFrame(docs)).cache()
        df.count()
        runs = []
        for _ in range(1 + args.repeat):
            s, res = timed(lambda: mspark.dedup(df, params=params, order_col="pos"))
            s2, got = timed(lambda: {(r.a, r.b) for r in res.pairs.collect()})
            s3, n = timed(lambda: res.docs.filter("keep").count())
            runs.append((s + s2 + s3, res.cc_rounds, res.keep_rounds))
            assert got == ref, f"Spark found {len(got)} pairs, mhdb dedup {len(ref)}"
            res.unpersist()
        build = []
        for r in range(args.repeat):
            out = work / f"shards{r}"
            s, shards = timed(lambda: mspark.build_shards(df, str(out), params, shards=2))
            m, added = timed(lambda: mspark.merge(shards, work / f"merged{r}"))
            build.append((s, m))
            assert added == int(shingled.sum())
        spark.stop()

        cold, warm = runs[0][0], min(r[0] for r in runs[1:])
        b_shards, b_merge = min(build, key=sum)
        print(f"corpus: {len(docs)} documents ({mb:.1f} MB of JSONL), {len(ref)} pairs at 0.7")
        print(f"master: {args.master}, machine: {os.cpu_count()} cores")
        print(f"mhdb create+add (1 machine): {add_s:.3f} s")
        print(f"spark build_shards (2) + merge: {b_shards:.2f} s + {b_merge:.3f} s"
              f"  = {(b_shards + b_merge) / add_s:.0f}x the CLI")
        print(f"mhdb dedup (1 machine): {dedup_s:.3f} s")
        print(f"spark dedup: cold {cold:.1f} s, warm {warm:.1f} s (best of {args.repeat})"
              f"  = {warm / dedup_s:.0f}x the CLI warm; rounds cc={runs[0][1]} keep={runs[0][2]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
