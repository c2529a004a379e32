#!/usr/bin/env python3
"""mhdb.spark in Spark local mode, at up to millions of documents, against a straightforward
PySpark + datasketch MinHash-LSH pipeline (the text-dedup shape) and the `mhdb` CLI, on the
same documents in the same run.

Usage:
  python -m tools.bench.bench_spark --docs 1000000           (BENCHMARKS.md, 1M: all four, ~25 min)
  python -m tools.bench.bench_spark --docs 100000 --run mhdb-dedup,build,cli
      [--master local[2]] [--driver-memory 6g] [--partitions 16] [--work /tmp/bench-spark]
  python -m tools.bench.bench_spark --corpus messy --docs 3000 --repeat 3   (the small-corpus table)

The baseline signs in Python at about 0.5-5 ms per document: at 1M documents it alone took
15 minutes on two cores lightly loaded (and about an hour under load average 10).

Run it with a Python that has `pip install './python[spark]' datasketch` (and Java 17+).

The corpus (`--corpus stdlib`, the default) is real text: every paragraph of the Python
standard library's sources and the gettext messages of 12 languages under /usr/share/locale,
drawn (seeded) into documents of 200-800 bytes. On top: 20 % edited copies of earlier
documents (0-20 % of words replaced, dropped or inserted; case and spacing changed; copies of
copies), and one boilerplate page in N/2000 variants (a hot bucket). Written once as Parquet
under --work and reused.

Each pipeline runs in the same SparkSession and is timed wall-clock; for each the script
reads from Spark's REST API the shuffle bytes written and read and the bytes spilled, and
samples every 0.25 s the resident memory of the JVM (driver = executor in local mode) and of
the Python workers (all processes under this one), reporting the peaks:

- mhdb-dedup: `mhdb.spark.dedup` (pairs verified, connected components, keep), its outputs
  written to Spark's `noop` sink;
- build: `mhdb.spark.build_shards(shards=2)` + `merge`, and `mhdb stats` of the merged index;
- baseline: per-row datasketch `MinHash` (same char 5-gram shingles after the same
  normalization, same num_perm, bands and rows) in `mapPartitions`, band keys exploded,
  `groupBy(band, key)`, star edges from each bucket's smallest id, `distinct`, then
  large-star / small-star rounds on RDDs until no edge changes, as text-dedup's
  minhash_spark.py does; no verification of candidates;
- cli: `mhdb create` + `add` + `dedup --format pairs` on one machine (and the pairs compared
  with mhdb-dedup's, which must be equal).

Results are printed and appended as one JSON line to --work/results.jsonl.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.request

from . import hot_corpus

ROOT = pathlib.Path(__file__).resolve().parents[2]

MHDB = ROOT / "target" / "release" / "mhdb"
THRESHOLD = 0.8


# ---------------------------------------------------------------------------------------------
# The corpus


def _paragraph_pool(rng: random.Random) -> list[str]:
    """Paragraphs of the stdlib's .py files and gettext messages of 12 languages, in a fixed
    order, each 40-400 characters."""
    stdlib = pathlib.Path(sysconfig.get_paths()["stdlib"])
    pool = []
    for p in sorted(stdlib.rglob("*.py")):
        if "site-packages" in p.parts:
            continue
        try:
            text = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for para in text.split("\n\n"):
            para = para.strip("\n")
            if len(para) >= 40:
                pool.append(para[:400])
    for lang in ["de", "fr", "es", "pt_BR", "pl", "cs", "ru", "uk", "el", "ja", "zh_CN", "ko"]:
        msgs = hot_corpus.catalog_messages(lang)
        # Messages in runs of 2-4, as a page strings them together.
        i = 0
        while i < len(msgs):
            n = rng.randint(2, 4)
            pool.append(" ".join(msgs[i : i + n])[:400])
            i += n
    return pool


def _edit(text: str, rate: float, rng: random.Random, vocab: list[str]) -> str:
    words = text.split(" ")
    out = []
    for w in words:
        r = rng.random()
        if r < rate / 3:
            continue  # dropped
        if r < 2 * rate / 3:
            out.append(rng.choice(vocab))  # replaced
            continue
        out.append(w)
        if r < rate:
            out.append(rng.choice(vocab))  # inserted
    text = " ".join(out)
    if rng.random() < 0.2:
        text = text.upper() if rng.random() < 0.3 else text.replace(" ", "  ").replace("\n", " \t")
    return text


def build_corpus(n: int, out: pathlib.Path, seed: int = 1) -> dict:
    """Writes `n` documents (id int64 from 0, text) as Parquet files of 50,000 rows under
    `out`; returns a summary."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    pool = _paragraph_pool(rng)
    vocab = sorted({w for p in pool[:20000] for w in p.split() if 3 <= len(w) <= 12})
    boiler = (
        "We use cookies to improve your experience on our site. By continuing to browse you "
        "agree to our use of cookies. The page you requested could not be found; it may have "
        "moved, or the link you followed may be broken. Return to the home page or use the "
        "search box above to find what you were looking for. Copyright (c) the site's authors."
    )
    hot = max(1, n // 2000)
    hot_at = set(rng.sample(range(n), hot))
    texts: list[str] = []
    copies = 0
    out.mkdir(parents=True, exist_ok=True)
    part = 0
    total_bytes = 0

    def flush(lo: int) -> None:
        nonlocal part, total_bytes
        chunk = texts[lo:]
        total_bytes += sum(len(t.encode()) for t in chunk)
        table = pa.table(
            {"id": pa.array(range(lo, lo + len(chunk)), pa.int64()), "text": pa.array(chunk)}
        )
        pq.write_table(table, out / f"part-{part:05d}.parquet")
        part += 1

    lo = 0
    for i in range(n):
        if i in hot_at:
            text = f"{boiler} Ref {rng.randrange(10**6)}."
        elif texts and rng.random() < 0.2:
            copies += 1
            src = texts[rng.randrange(len(texts))]
            text = _edit(src, rng.choice([0.0, 0.01, 0.02, 0.05, 0.1, 0.2]), rng, vocab)
        else:
            target = rng.randint(200, 700)
            parts: list[str] = []
            size = 0
            while size < target:
                parts.append(pool[rng.randrange(len(pool))])
                size += len(parts[-1]) + 1
            text = "\n".join(parts)[:800]
        texts.append(text)
        if len(texts) - lo == 50000:
            flush(lo)
            lo = len(texts)
    if len(texts) > lo:
        flush(lo)
    summary = {
        "docs": n,
        "bytes": total_bytes,
        "edited_copies": copies,
        "boilerplate_variants": hot,
        "pool_paragraphs": len(pool),
    }
    out.with_suffix(".json").write_text(json.dumps(summary))
    return summary


def corpus(n: int, work: pathlib.Path) -> tuple[pathlib.Path, dict]:
    path = work / f"corpus-{n}"
    if not path.with_suffix(".json").exists():
        shutil.rmtree(path, ignore_errors=True)
        t = time.perf_counter()
        s = build_corpus(n, path)
        print(f"built corpus {path} in {time.perf_counter() - t:.0f} s: {s}", flush=True)
    return path, json.loads(path.with_suffix(".json").read_text())


# ---------------------------------------------------------------------------------------------
# Measuring: memory of this process tree, Spark's stage metrics


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def _tree(root: int) -> list[int]:
    kids, out, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def tree_cpu_seconds() -> float:
    """CPU seconds used so far by the processes under this one (the JVM, the Python workers,
    the CLI), with their reaped children: what a pipeline costs whatever the machine's load."""
    ticks = 0
    me = os.getpid()
    for pid in _tree(me):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime stime cutime cstime; of this process only its reaped children (the CLI).
        ticks += sum(int(x) for x in fields[13 if pid == me else 11 : 15])
    return ticks / os.sysconf("SC_CLK_TCK")


def _rss(pid: int) -> tuple[str, int]:
    try:
        with open(f"/proc/{pid}/status") as f:
            status = f.read()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
    except OSError:
        return "", 0
    m = re.search(r"VmRSS:\s+(\d+) kB", status)
    kind = "jvm" if b"java" in cmd.split(b"\0")[0] else "python" if b"python" in cmd else "other"
    return kind, int(m.group(1)) * 1024 if m else 0


class MemorySampler:
    """Peak resident bytes of the JVM, of the Python workers (summed), of other processes (the
    mhdb CLI) and of all, sampled every `every` seconds over the processes under this one.
    The JVM outlives `spark.stop()`: for the CLI, read the peak of "other"."""

    def __init__(self, every: float = 0.25) -> None:
        self.every = every
        self.peak = {"jvm": 0, "python_workers": 0, "other": 0, "total": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            kids = _children()
            todo, sums = list(kids.get(me, [])), {"jvm": 0, "python": 0, "other": 0}
            while todo:
                pid = todo.pop()
                kind, rss = _rss(pid)
                if kind:
                    sums[kind] += rss
                todo.extend(kids.get(pid, []))
            self.peak["jvm"] = max(self.peak["jvm"], sums["jvm"])
            self.peak["python_workers"] = max(self.peak["python_workers"], sums["python"])
            self.peak["other"] = max(self.peak["other"], sums["other"])  # the mhdb CLI
            self.peak["total"] = max(self.peak["total"], sum(sums.values()))
            self._stop.wait(self.every)

    def __enter__(self) -> "MemorySampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class StageMetrics:
    """Sums of Spark's stage metrics (REST API of the driver UI) over the stages a block ran."""

    FIELDS = ("shuffleWriteBytes", "shuffleReadBytes", "memoryBytesSpilled", "diskBytesSpilled",
              "executorRunTime", "executorCpuTime", "jvmGcTime")

    def __init__(self, spark) -> None:  # noqa: ANN001
        sc = spark.sparkContext
        self.url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/stages"

    def _stages(self) -> list[dict]:
        with urllib.request.urlopen(self.url + "?status=complete") as r:
            return json.load(r)

    def snapshot(self) -> set[tuple[int, int]]:
        return {(s["stageId"], s["attemptId"]) for s in self._stages()}

    def since(self, before: set[tuple[int, int]]) -> dict[str, int]:
        time.sleep(2)  # the listener bus is asynchronous: let the last stages land
        new = [s for s in self._stages() if (s["stageId"], s["attemptId"]) not in before]
        out = {f: sum(s.get(f, 0) for s in new) for f in self.FIELDS}
        out["stages"] = len(new)
        return out


def measured(name: str, spark, f):  # noqa: ANN001, ANN201
    metrics = StageMetrics(spark) if spark is not None else None
    before = metrics.snapshot() if metrics else set()
    cpu = tree_cpu_seconds()
    with MemorySampler() as mem:
        t = time.perf_counter()
        extra = f() or {}
        wall = time.perf_counter() - t
    out = {"pipeline": name, "wall_s": round(wall, 2),
           "cpu_s": round(tree_cpu_seconds() - cpu, 1), "loadavg": round(os.getloadavg()[0], 1),
           **{f"peak_rss_{k}": v for k, v in mem.peak.items()}}
    if metrics:
        out.update(metrics.since(before))
    out.update(extra)
    print(json.dumps({k: v for k, v in out.items() if not k.startswith("_")}), flush=True)
    return out


# ---------------------------------------------------------------------------------------------
# The baseline: PySpark + datasketch, the text-dedup shape


def baseline_dedup(df, params: dict) -> dict:  # noqa: ANN001
    """Near-duplicate clusters the way text-dedup's minhash_spark.py finds them, with
    datasketch's MinHash per row. Returns counts (edges, components' rounds, duplicates)."""
    from pyspark.sql import functions as F

    num_perm, bands, rows = params["num_perm"], params["bands"], params["rows"]
    seed = params["seed"]

    # mhdb's default shingles: lowercase, white space collapsed, character 5-grams. Defined
    # here so that Spark ships it to the Python workers with `sign` (a closure is pickled by
    # value), as a team's own helper would be.
    space = str.maketrans({c: " " for c in SPACES})

    def shingles(text, n=5):  # noqa: ANN001, ANN202
        t = " ".join(w for w in text.lower().translate(space).split(" ") if w)
        if not t:
            return set()
        if len(t) <= n:
            return {t}
        return {t[i : i + n] for i in range(len(t) - n + 1)}

    def sign(it):  # noqa: ANN001, ANN202
        from datasketch import MinHash

        first = MinHash(num_perm=num_perm, seed=seed)
        perms, scheme = first.permutations, first.scheme  # once per partition
        for row in it:
            m = MinHash(num_perm=num_perm, seed=seed, permutations=perms, scheme=scheme)
            s = shingles(row.text)
            if not s:
                continue
            m.update_batch([g.encode("utf-8") for g in s])
            hv = m.hashvalues
            for b in range(bands):
                yield (b, hv[b * rows : (b + 1) * rows].tobytes(), row.id)

    postings = df.select("id", "text").rdd.mapPartitions(sign).toDF(["band", "key", "id"])
    buckets = (
        postings.groupBy("band", "key")
        .agg(F.collect_list("id").alias("ids"))
        .filter(F.size("ids") > 1)
    )

    def star(ids):  # noqa: ANN001, ANN202
        lo = min(ids)
        return [(i, lo) for i in ids if i != lo]

    edges = buckets.rdd.flatMap(lambda r: star(r.ids)).distinct().cache()
    n_edges = edges.count()

    def large_star(pair):  # noqa: ANN001, ANN202
        u, nbrs = pair
        nbrs = set(nbrs)
        m = min(min(nbrs), u)
        return [(v, m) for v in nbrs if v > u]

    def small_star(pair):  # noqa: ANN001, ANN202
        u, nbrs = pair
        nbrs = set(nbrs)
        m = min(min(nbrs), u)
        return [(v, m) for v in nbrs | {u} if v != m]

    rounds = 0
    e = edges
    while True:
        rounds += 1
        a = (
            e.flatMap(lambda p: [(p[0], p[1]), (p[1], p[0])])
            .groupByKey()
            .flatMap(large_star)
            .distinct()
            .cache()
        )
        b = a.map(lambda p: (p[0], p[1]) if p[0] > p[1] else (p[1], p[0]))
        b = b.groupByKey().flatMap(small_star).distinct().cache()
        changes = a.subtract(b).union(b.subtract(a)).count()
        e.unpersist()
        a.unpersist()
        e = b
        if changes == 0:
            break
    # A document is a duplicate when its component's smallest id is another document.
    dups = e.toDF(["id", "cluster"])
    docs = df.select("id").join(dups, "id", "left").withColumn(
        "keep", F.col("cluster").isNull()
    )
    docs.write.format("noop").mode("overwrite").save()
    n_dups = dups.count()
    e.unpersist()
    edges.unpersist()
    return {"candidate_edges": n_edges, "cc_rounds": rounds, "dropped": n_dups}


# The white space mhdb's normalization collapses (format/hashing.md).
SPACES = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)


# ---------------------------------------------------------------------------------------------
# The runs


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MHDB), *map(str, args)], check=True, capture_output=True, text=True)


def stats_bytes(index: pathlib.Path) -> dict:
    """`mhdb stats`' bytes of an index, and its bucket skew."""
    st = json.loads(cli("stats", index, "--json").stdout)
    return {"index_bytes": sum(st["bytes"].values()), "live_docs": st["live_docs"],
            "hot_buckets": st["hot_buckets"], "max_bucket": max(b["max"] for b in st["bands"])}


def run_large(args: argparse.Namespace) -> None:
    import pyarrow.parquet as pq
    from mhdb import spark as mspark

    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    path, summary = corpus(args.docs, work)
    params = mspark.resolve_params({"threshold": THRESHOLD, "seed": 7})
    runs = args.run.split(",")
    result = {"docs": args.docs, "corpus": summary, "master": args.master, "params": params,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "loadavg_start": os.getloadavg()[0], "runs": []}

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(args.master)
        .appName("bench_spark")
        .config("spark.driver.memory", args.driver_memory)
        .config("spark.sql.shuffle.partitions", str(args.partitions))
        .config("spark.default.parallelism", str(args.partitions))
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.retainedStages", "100000")
        .config("spark.ui.retainedJobs", "100000")
        .config("spark.sql.ui.retainedExecutions", "10000")
        .config("spark.local.dir", str(work / "spark-local"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.parquet(str(path))
    print(f"corpus: {summary}; input partitions {df.rdd.getNumPartitions()}", flush=True)

    pairs_dir = work / "spark-pairs"
    if "mhdb-dedup" in runs:
        def go() -> dict:
            res = mspark.dedup(df, "id", "text", params=params)
            res.docs.write.format("noop").mode("overwrite").save()
            res.pairs.write.mode("overwrite").parquet(str(pairs_dir))
            n_pairs = spark.read.parquet(str(pairs_dir)).count()
            dropped = res.docs.filter("not keep").count()
            out = {"pairs": n_pairs, "dropped": dropped, "cc_rounds": res.cc_rounds,
                   "keep_rounds": res.keep_rounds}
            res.unpersist()
            return out

        result["runs"].append(measured("mhdb-dedup", spark, go))
    if "build" in runs:
        shards_dir, merged = work / "shards", work / "merged"
        shutil.rmtree(shards_dir, ignore_errors=True)
        shutil.rmtree(merged, ignore_errors=True)

        def build() -> dict:
            t = time.perf_counter()
            shards = mspark.build_shards(df, str(shards_dir), params, shards=args.shards)
            t_shards = time.perf_counter() - t
            added = mspark.merge(shards, merged)
            return {"build_shards_s": round(t_shards, 2),
                    "merge_s": round(time.perf_counter() - t - t_shards, 2), "added": added}

        r = measured("build", spark, build)
        r.update(stats_bytes(merged))
        r["index_bytes_per_doc"] = round(r["index_bytes"] / max(1, r["live_docs"]), 1)
        print(json.dumps({k: r[k] for k in ("index_bytes", "live_docs", "hot_buckets", "max_bucket", "index_bytes_per_doc")}), flush=True)
        result["runs"].append(r)
        shutil.rmtree(shards_dir, ignore_errors=True)
    if "baseline" in runs:
        result["runs"].append(
            measured("baseline-datasketch", spark, lambda: baseline_dedup(df, params))
        )
    spark.stop()

    if "cli" in runs:
        jsonl = work / f"corpus-{args.docs}.jsonl"
        if not jsonl.exists():
            with open(jsonl, "w", encoding="utf-8") as f:
                for p in sorted(path.glob("*.parquet")):
                    t = pq.read_table(p)
                    for i, text in zip(t.column("id").to_pylist(), t.column("text").to_pylist()):
                        f.write(json.dumps({"id": str(i), "text": text}, ensure_ascii=False) + "\n")
        idx = work / "cli-idx"
        shutil.rmtree(idx, ignore_errors=True)

        def one_machine() -> dict:
            t = time.perf_counter()
            # The very parameters the Spark pipelines used (not the CLI's defaults, which
            # may differ between the installed package and this build).
            cli("create", idx, "--threshold", str(params["threshold"]),
                "--seed", str(params["seed"]), "--scheme", params["scheme"],
                "--shingle", params["shingle"], "--perms", str(params["num_perm"]),
                "--bits", str(params["bits"]), "--band-slots", str(params["band_slots"]),
                "--bands", str(params["bands"]), "--rows", str(params["rows"]),
                "--bucket-cap", str(params["bucket_cap"] or 0))
            cli("add", idx, jsonl)
            t_add = time.perf_counter() - t
            out = cli("dedup", idx, "--format", "pairs").stdout
            return {"add_s": round(t_add, 2), "dedup_s": round(time.perf_counter() - t - t_add, 2),
                    "pairs": out.count("\n"), "_pairs": out}

        r = measured("cli", None, one_machine)
        ref = {(p["a"], p["b"]) for p in map(json.loads, r.pop("_pairs").splitlines())}
        r.update(stats_bytes(idx))
        r["index_bytes_per_doc"] = round(r["index_bytes"] / max(1, r["live_docs"]), 1)
        if pairs_dir.exists():
            got = pq.read_table(pairs_dir)
            spark_pairs = set(zip(map(str, got.column("a").to_pylist()),
                                  map(str, got.column("b").to_pylist())))
            r["pairs_equal_spark"] = spark_pairs == ref
            print(f"cli pairs {len(ref)}, spark pairs {len(spark_pairs)}, equal: "
                  f"{spark_pairs == ref}", flush=True)
        result["runs"].append(r)
    result["loadavg_end"] = os.getloadavg()[0]
    with open(work / "results.jsonl", "a") as f:
        f.write(json.dumps(result) + "\n")
    print(json.dumps(result, indent=1))


def _load_messy_corpus():  # noqa: ANN202
    """python/tests/messy_corpus.py, loaded from its file: this comparison runs on exactly the
    corpus of the Spark tests, and python/tests is not an importable package."""
    path = ROOT / "python" / "tests" / "messy_corpus.py"
    spec = importlib.util.spec_from_file_location("messy_corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_messy(args: argparse.Namespace) -> None:
    """The small-corpus comparison with the CLI (python/tests/test_spark.py's corpus)."""
    import mhdb
    import numpy as np
    import pandas as pd
    from mhdb import spark as mspark

    def timed(f):  # noqa: ANN001, ANN202
        t = time.perf_counter()
        out = f()
        return time.perf_counter() - t, out

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    messy_corpus = _load_messy_corpus()
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
        jsonl = work / "corpus.jsonl"
        messy_corpus.write_jsonl([d for d, s in zip(docs, shingled) if s], jsonl)
        add_s, _ = timed(lambda: cli("add", idx, jsonl))
        dedup_s = min(timed(lambda: cli("dedup", idx, "--format", "pairs"))[0]
                      for _ in range(args.repeat))
        ref = {(p["a"], p["b"])
               for p in map(json.loads, cli("dedup", idx, "--format", "pairs").stdout.splitlines())}
        spark = (SparkSession.builder.master(args.master)
                 .config("spark.sql.shuffle.partitions", "4")
                 .config("spark.ui.showConsoleProgress", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        df = spark.createDataFrame(pd.DataFrame(docs)).cache()
        df.count()
        runs = []
        for _ in range(1 + args.repeat):
            s, res = timed(lambda: mspark.dedup(df, params=params, order_col="pos"))
            s2, got = timed(lambda: {(r.a, r.b) for r in res.pairs.collect()})
            s3, _ = timed(lambda: res.docs.filter("keep").count())
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
        print(f"corpus: {len(docs)} documents, {len(ref)} pairs at 0.7; master {args.master}")
        print(f"mhdb create+add (1 machine): {add_s:.3f} s")
        print(f"spark build_shards (2) + merge: {b_shards:.2f} s + {b_merge:.3f} s")
        print(f"mhdb dedup (1 machine): {dedup_s:.3f} s")
        print(f"spark dedup: cold {cold:.1f} s, warm {warm:.1f} s (best of {args.repeat}); "
              f"rounds cc={runs[0][1]} keep={runs[0][2]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", choices=["stdlib", "messy"], default="stdlib")
    ap.add_argument("--docs", type=int, default=100000)
    ap.add_argument("--run", default="mhdb-dedup,build,baseline,cli")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="6g")
    ap.add_argument("--partitions", type=int, default=16, help="spark.sql.shuffle.partitions")
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="messy corpus only")
    ap.add_argument("--work", default="/tmp/bench-spark", help="corpus, shards, Spark scratch")
    args = ap.parse_args()
    if not MHDB.exists():
        subprocess.run(["cargo", "build", "--release", "--bin", "mhdb"], cwd=ROOT, check=True)
    (run_messy if args.corpus == "messy" else run_large)(args)


if __name__ == "__main__":
    main()
