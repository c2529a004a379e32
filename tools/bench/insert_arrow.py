#!/usr/bin/env python3
"""`Index.insert_arrow` from a pyarrow and a Polars table against `Index.insert_many` from
Python lists of the same rows: documents per second (wall and per CPU
second, user + system of every thread) and the memory the load adds.

The corpus is tools/bench/hot_corpus.py's (real multilingual text, 25 languages), built if
missing. Each run is a fresh child process that reads the corpus into the form it loads
(lists, a pyarrow table, a Polars DataFrame; not timed), creates an index and loads it once,
timing the load (wall and process CPU, every thread) and how much it raised the process's
peak RSS; the parent also reads the child's whole peak RSS from `wait4`. Runs are
interleaved (each round runs every form once, in turn) and the median over rounds is printed,
with the load average.

    pip install ./python pyarrow polars      # in a virtualenv
    python -m tools.bench.insert_arrow [--pages 30000] [--rounds 5] [--dir /tmp/arrowbench]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FORMS = ("insert_many", "insert_arrow_pyarrow", "insert_arrow_polars")


def child(form: str, corpus: str, work: str) -> None:
    """Loads the corpus in `form` into a new index; prints the seconds the load took."""
    import resource
    import time

    import mhdb

    ids, texts = [], []
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            ids.append(d["id"])
            texts.append(d["text"])
    data: object = None
    if form == "insert_arrow_pyarrow":
        import pyarrow as pa

        data = pa.table({"id": ids, "text": texts})
        ids, texts = [], []
    elif form == "insert_arrow_polars":
        import polars as pl

        data = pl.DataFrame({"id": ids, "text": texts})
        ids, texts = [], []
    with tempfile.TemporaryDirectory(dir=work) as d:
        with mhdb.Index.create(os.path.join(d, "idx")) as idx:
            peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            start, cpu_start = time.perf_counter(), time.process_time()
            if data is None:
                idx.insert_many(ids, texts)
            else:
                idx.insert_arrow(data, id="id", text="text")
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            peak_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            assert len(idx) > 0
    print(json.dumps({"load_s": elapsed, "load_cpu_s": cpu,
                      "peak_growth_mb": (peak_after - peak_before) / 1024}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=30000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default="/tmp/arrowbench")
    ap.add_argument("--child")
    ap.add_argument("--corpus")
    args = ap.parse_args()
    if args.child:
        child(args.child, args.corpus, args.dir)
        return
    os.makedirs(args.dir, exist_ok=True)
    corpus = os.path.join(args.dir, f"corpus-{args.pages}.jsonl")
    if not os.path.exists(corpus):
        subprocess.run(
            [sys.executable, "-m", "tools.bench.hot_corpus", "--pages", str(args.pages),
             "--out", corpus],
            check=True, cwd=ROOT,
        )
    with open(corpus, encoding="utf-8") as f:
        docs = sum(1 for _ in f)
    results: dict = {form: [] for form in FORMS}
    for r in range(args.rounds):
        for form in FORMS:
            results[form].append(measure(form, corpus, args.dir))
        print(f"round {r + 1}/{args.rounds} done, load average {os.getloadavg()[0]:.2f}",
              file=sys.stderr)
    print(f"{docs} documents, {args.rounds} interleaved rounds, medians; "
          f"load average {os.getloadavg()[0]:.2f}")
    base = statistics.median(x["docs_per_s"] for x in results["insert_many"])
    base_cpu = statistics.median(x["docs_per_cpu_s"] for x in results["insert_many"])
    print(f"{'form':<22}{'docs/s':>9}{'ratio':>7}{'docs/CPU-s':>12}{'ratio':>7}"
          f"{'load peak growth MB':>21}{'process peak MB':>17}")
    for form in FORMS:
        med = {k: statistics.median(x[k] for x in results[form]) for k in results[form][0]}
        print(f"{form:<22}{med['docs_per_s']:>9,.0f}{med['docs_per_s'] / base:>7.2f}"
              f"{med['docs_per_cpu_s']:>12,.0f}{med['docs_per_cpu_s'] / base_cpu:>7.2f}"
              f"{med['peak_growth_mb']:>21.0f}{med['rss_mb']:>17.0f}")


def measure(form: str, corpus: str, work: str) -> dict:
    """One child run: its load rate, and its whole CPU time and peak RSS from wait4."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.bench.insert_arrow", "--child", form,
         "--corpus", corpus, "--dir", work],
        cwd=ROOT, stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{form}: child failed with status {status}")
    load = json.loads(out)
    with open(corpus, encoding="utf-8") as f:
        docs = sum(1 for _ in f)
    return {
        "docs_per_s": docs / load["load_s"],
        "docs_per_cpu_s": docs / load["load_cpu_s"],
        "peak_growth_mb": load["peak_growth_mb"],
        "rss_mb": usage.ru_maxrss / 1024,
    }


if __name__ == "__main__":
    main()
