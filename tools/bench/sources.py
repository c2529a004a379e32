#!/usr/bin/env python3
"""`mhdb add` from Parquet and from zstd-compressed JSON Lines against plain JSON Lines of the
same rows.

The corpus is tools/bench/hot_corpus.py's (real multilingual text, 25 languages), built if
missing. From it this writes, once, the same rows as plain JSON Lines, as `.jsonl.zst` and
`.jsonl.gz` (pyarrow's codecs, level 3 and 6) and as Parquet (pyarrow, snappy and zstd, row
groups of 65,536 rows, columns `id` and `text` plus a `meta` column that is not read). Then,
in interleaved rounds (each round loads every input once, in turn), `mhdb create` +
`mhdb add` into a fresh index under /usr/bin/time, and prints per input the median over
rounds of wall time, user + system CPU seconds and MB of text per CPU second (the per-core
rate), beside the plain JSON Lines figure.

Needs pyarrow (`pip install pyarrow`, in a virtualenv):

    cargo build --release
    python3 -m venv /tmp/srcvenv && /tmp/srcvenv/bin/pip install pyarrow
    /tmp/srcvenv/bin/python -m tools.bench.sources [--pages 20000] [--rounds 3] [--dir /tmp/srcbench]
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def build_inputs(work, pages):
    """The corpus in every input form; returns {name: path} and the MB of text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    corpus = os.path.join(work, "corpus.jsonl")
    if not os.path.exists(corpus):
        subprocess.run(
            [sys.executable, "-m", "tools.bench.hot_corpus", "--pages", str(pages),
             "--out", corpus],
            check=True, cwd=ROOT,
        )
    ids, texts = [], []
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            ids.append(d["id"])
            texts.append(d["text"])
    text_mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    table = pa.table({
        "id": ids,
        "meta": [f"unread column {i}" for i in range(len(ids))],
        "text": texts,
    })
    inputs = {"jsonl": corpus}
    with open(corpus, "rb") as f:
        raw = f.read()
    for name, codec, level in [("jsonl.zst", "zstd", 3), ("jsonl.gz", "gzip", 6)]:
        path = os.path.join(work, f"corpus.{name}")
        if not os.path.exists(path):
            with pa.CompressedOutputStream(path, codec) as out:
                out.write(raw)
        inputs[name] = path
    for codec in ["snappy", "zstd"]:
        path = os.path.join(work, f"corpus.{codec}.parquet")
        if not os.path.exists(path):
            pq.write_table(table, path, compression=codec, row_group_size=65536)
        inputs[f"parquet ({codec})"] = path
    return inputs, text_mb


def run_add(mhdb, path, work):
    db = os.path.join(work, "db")
    shutil.rmtree(db, ignore_errors=True)
    subprocess.run([mhdb, "create", db], check=True, capture_output=True)
    p = subprocess.run(
        ["/usr/bin/time", "-f", "TIME %e %U %S %M", mhdb, "add", db, path],
        capture_output=True, text=True,
    )
    if p.returncode != 0:
        sys.exit(f"mhdb add {path} failed:\n{p.stderr}")
    m = re.search(r"TIME ([\d.]+) ([\d.]+) ([\d.]+) (\d+)", p.stderr)
    shutil.rmtree(db, ignore_errors=True)
    return {"wall": float(m.group(1)), "cpu": float(m.group(2)) + float(m.group(3)),
            "rss_mb": int(m.group(4)) / 1024}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/tmp/srcbench")
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mhdb", default=os.path.join(ROOT, "target/release/mhdb"))
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    inputs, text_mb = build_inputs(args.dir, args.pages)
    times = {name: [] for name in inputs}
    for _ in range(args.rounds):
        for name, path in inputs.items():
            times[name].append(run_add(args.mhdb, path, args.dir))
    print(f"{args.pages} pages, {text_mb:.1f} MB of text; median of {args.rounds} interleaved "
          "rounds")
    print(f"{'input':<18} {'file MB':>8} {'wall s':>7} {'CPU s':>7} {'MB/CPU-s':>9} "
          f"{'vs jsonl':>9} {'peak RSS MB':>12}")
    base = None
    for name, path in inputs.items():
        wall = statistics.median(t["wall"] for t in times[name])
        cpu = statistics.median(t["cpu"] for t in times[name])
        rss = statistics.median(t["rss_mb"] for t in times[name])
        rate = text_mb / cpu
        base = base or rate
        size = os.path.getsize(path) / 1e6
        print(f"{name:<18} {size:>8.1f} {wall:>7.2f} {cpu:>7.2f} {rate:>9.1f} "
              f"{rate / base:>9.2f} {rss:>12.0f}")


if __name__ == "__main__":
    main()
