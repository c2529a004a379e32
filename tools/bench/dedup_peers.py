#!/usr/bin/env python3
"""`mhdb dedup-files` against datatrove's MinhashDedup pipeline and text-dedup's MinHash,
end to end on the same files, with exact-Jaccard quality.

    python3 -m venv /tmp/peers-venv
    /tmp/peers-venv/bin/pip install 'datatrove[processing]' spacy text-dedup pyarrow zstandard xxhash psutil
    /tmp/peers-venv/bin/python -m tools.bench.dedup_peers --docs 20000 --rounds 3

1. The corpus (built once per --docs/--seed in --dir, then reused): real multilingual text from
   this machine (hot_corpus.py's gettext catalogs in 25 languages and license sections), as
   Parquet shards (zstd) and as .jsonl.zst shards with the same rows. A source is a
   boilerplate-heavy reference page (its language's site chrome, a command line and a body of
   4-16 messages: pages of a language share their chrome, so their similarity sits at 0.3-0.6),
   a free page (12-30 messages) or a license page (one license section between two messages:
   the pages of a section are near-duplicates of each other). Beside them, planted copies of
   earlier sources: exact copies, reformatted copies (case and line breaks) and copies with
   1-15 % of their words replaced. Every row has a group (its source, or its license
   section), written to groups.txt: near-duplicates are within a group, so a subsample of
   whole groups holds the neighbours of its documents.
2. The tools (--tools), interleaved over --rounds (the order reversed every other round), each in its
   own process on the same Parquet folder: `mhdb dedup-files` with its default shingling
   (char:5) and with datatrove's (word:5), datatrove's four stages with its defaults
   (MinhashConfig(): word 5-grams, 14 buckets x 8 hashes) on a LocalPipelineExecutor with
   2 workers, and text-dedup's MinHash CLI (when it is installed and runs). Per run: wall
   time, user+sys CPU of the process tree, peak RSS of the tree (sum of its processes'
   VmRSS and RssAnon, sampled every 0.1 s), documents in and out, and the load average.
3. Truth: on a subsample of whole groups (>= --truth-docs documents; every document when the
   corpus is smaller), the exact Jaccard of every pair at or above 0.75, by prefix filtering,
   of char 5-gram sets and of word 5-gram sets under format/hashing.md's normalization
   (tools/conformance/reference_sketch.py's `shingles`). A removed document is right when it
   has a kept neighbour at J >= 0.8 (tolerant: 0.75): precision. A document with a neighbour
   at J >= 0.8 (tolerant: 0.85) is resolved when it is not kept beside such a neighbour:
   recall is the share resolved.
4. Prints the tables in markdown (and writes them with the raw runs to --results).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

from tools.bench import hot_corpus

ROOT = Path(__file__).resolve().parents[2]
CORPUS_VERSION = 1
EXACT_SHARE = 0.04
NEAR_SHARE = 0.08
RECENT_SOURCES = 20000
SHARD_DOCS = 50000
EDIT_RATES = (0.01, 0.02, 0.03, 0.05, 0.08, 0.12, 0.15)


# --- the corpus ------------------------------------------------------------------------------

class Sources:
    """The machine's text, and the rules that turn it into source pages and planted copies."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.pools = {}
        for lang in hot_corpus.LANGUAGES:
            msgs = hot_corpus.catalog_messages(lang)
            if len(msgs) >= 2000:
                self.pools[lang] = msgs
        self.langs = sorted(self.pools)
        self.licenses = hot_corpus.license_sections()
        self.chrome = {lang: rng.sample(self.pools[lang], 12) for lang in self.langs}
        self.weights = [1 / (rank + 1) ** 0.8 for rank in range(len(self.langs))]

    def source(self, i: int) -> tuple[str, str, int]:
        """(language, text, license section or -1) of a new source page."""
        rng = self.rng
        kind = rng.random()
        if kind < 0.05:
            section = rng.randrange(len(self.licenses))
            lang = self.langs[rng.randrange(len(self.langs))]
            head, foot = rng.sample(self.pools[lang], 2)
            return lang, "\n".join([head, self.licenses[section], foot]), section
        if kind < 0.75:
            lang = rng.choices(self.langs, self.weights)[0]
            chrome = self.chrome[lang]
            pool = self.pools[lang]
            command = f"{rng.choice(pool).split()[0]}-{i} " + " ".join(
                f"--opt-{rng.randrange(10**6)}" for _ in range(3))
            body = " ".join(rng.sample(pool, rng.randint(4, 16)))
            return lang, "\n".join([" ".join(chrome[:6]), command, body,
                                    " ".join(chrome[6:])]), -1
        lang = self.langs[rng.randrange(len(self.langs))]
        return lang, " ".join(self.rng.sample(self.pools[lang], self.rng.randint(12, 30))), -1

    def edited(self, lang: str, text: str) -> str:
        """A planted near-duplicate: reformatted, or 1-15 % of its words replaced."""
        rng = self.rng
        if rng.random() < 0.2:
            return text.replace("\n", "\n\n").upper()
        words = text.split(" ")
        rate = rng.choice(EDIT_RATES)
        pool = self.pools[lang]
        for k in range(len(words)):
            if rng.random() < rate:
                words[k] = rng.choice(rng.choice(pool).split())
        return " ".join(words)


def corpus_rows(n: int, seed: int) -> Iterator[tuple[str, str, int]]:
    """(id, text, group) of the corpus's n rows, deterministic for a seed on a machine."""
    rng = random.Random(seed)
    src = Sources(rng)
    recent: list[tuple[str, str, int]] = []
    section_group: dict[int, int] = {}
    groups = 0
    for i in range(n):
        r = rng.random()
        if recent and r < EXACT_SHARE + NEAR_SHARE:
            lang, text, group = recent[rng.randrange(len(recent))]
            if r >= EXACT_SHARE:
                text = src.edited(lang, text)
            yield f"doc-{i:07d}", text, group
            continue
        lang, text, section = src.source(i)
        if section >= 0 and section in section_group:
            group = section_group[section]
        else:
            group = groups
            groups += 1
            if section >= 0:
                section_group[section] = group
        item = (lang, text, group)
        if len(recent) < RECENT_SOURCES:
            recent.append(item)
        else:
            recent[rng.randrange(RECENT_SOURCES)] = item
        yield f"doc-{i:07d}", text, group


def write_shard(corpus: Path, shard: int, ids: list[str], texts: list[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    name = f"part-{shard:05d}"
    pq.write_table(pa.table({"id": ids, "text": texts}), corpus / "parquet" / f"{name}.parquet",
                   compression="zstd")
    with open(corpus / "jsonl" / f"{name}.jsonl.zst", "wb") as raw:
        with zstandard.ZstdCompressor(level=3).stream_writer(raw) as out:
            for key, text in zip(ids, texts):
                line = json.dumps({"id": key, "text": text}, ensure_ascii=False) + "\n"
                out.write(line.encode())


def build_corpus(corpus: Path, n: int, seed: int) -> dict[str, Any]:
    """Writes the corpus to `corpus` unless the one there was made with the same settings."""
    meta_path = corpus / "meta.json"
    want = {"version": CORPUS_VERSION, "docs": n, "seed": seed}
    if meta_path.exists():
        meta: dict[str, Any] = json.loads(meta_path.read_text())
        if all(meta.get(k) == v for k, v in want.items()):
            return meta
    shutil.rmtree(corpus, ignore_errors=True)
    (corpus / "parquet").mkdir(parents=True)
    (corpus / "jsonl").mkdir()
    shards = max(2, math.ceil(n / SHARD_DOCS))
    per_shard = math.ceil(n / shards)
    started = time.perf_counter()
    ids: list[str] = []
    texts: list[str] = []
    text_bytes = 0
    shard = 0
    with open(corpus / "groups.txt", "w") as groups:
        for key, text, group in corpus_rows(n, seed):
            ids.append(key)
            texts.append(text)
            text_bytes += len(text.encode())
            groups.write(f"{group}\n")
            if len(ids) == per_shard:
                write_shard(corpus, shard, ids, texts)
                shard, ids, texts = shard + 1, [], []
    if ids:
        write_shard(corpus, shard, ids, texts)
    meta = dict(want, shards=shard + (1 if ids else 0), text_mb=round(text_bytes / 1e6, 1),
                seconds=round(time.perf_counter() - started, 1))
    meta_path.write_text(json.dumps(meta) + "\n")
    return meta


# --- truth -----------------------------------------------------------------------------------

def truth_subsample(corpus: Path, target: int, seed: int) -> list[int]:
    """Row numbers of whole groups, in a random group order, until at least `target` rows."""
    groups = [int(line) for line in (corpus / "groups.txt").read_text().split()]
    if len(groups) <= target:
        return list(range(len(groups)))
    members: dict[int, list[int]] = defaultdict(list)
    for row, group in enumerate(groups):
        members[group].append(row)
    order = sorted(members)
    random.Random(seed).shuffle(order)
    picked: list[int] = []
    for group in order:
        if len(picked) >= target:
            break
        picked.extend(members[group])
    return sorted(picked)


def read_rows(corpus: Path, rows: list[int]) -> list[tuple[str, str]]:
    """(id, text) of the given row numbers, in order."""
    import pyarrow.parquet as pq

    wanted = set(rows)
    out: list[tuple[str, str]] = []
    base = 0
    for path in sorted((corpus / "parquet").glob("*.parquet")):
        table = pq.read_table(path, columns=["id", "text"])
        ids = table.column("id").to_pylist()
        texts = table.column("text").to_pylist()
        out.extend((ids[k], texts[k]) for k in range(len(ids)) if base + k in wanted)
        base += len(ids)
    return out


def shingle_arrays(texts: list[str], kind: str) -> list[Any]:
    """Each text's 5-gram set under the spec's normalization, as a sorted array of 64-bit
    hashes (Python's hash of the shingle bytes: one process, so consistent)."""
    import numpy as np

    from tools.conformance import reference_sketch

    return [np.unique(np.fromiter(map(hash, reference_sketch.shingles(t, kind, 5)),
                                  dtype=np.int64)) for t in texts]


SHARED_PREFIX = 48


def prefix_tokens(sets: list[Any], t: float, cap: int) -> tuple[Any, Any, Any]:
    """(shingle rank, document) of each document's prefix: its |A| - ceil(t|A|) + k rarest
    shingles, k = SHARED_PREFIX, leaving out the shingles of more than `cap` documents; and
    per document, how many of its prefix shingles were left out.

    Two sets at J >= t share at least k shingles in their prefixes of this length (their k
    rarest common shingles: before the k-th, a set has at most |A| - ceil(t|A|) others)."""
    import numpy as np

    values, counts = np.unique(np.concatenate(sets), return_counts=True)
    order = np.lexsort((values, counts))
    rank_of = np.empty(len(values), dtype=np.int64)
    rank_of[order] = np.arange(len(values))
    frequent = counts[order] > cap
    tokens, docs, left_out = [], [], np.zeros(len(sets), dtype=np.int64)
    for d, s in enumerate(sets):
        length = len(s) - math.ceil(t * len(s)) + SHARED_PREFIX
        ranks = np.sort(rank_of[np.searchsorted(values, s)])[:length]
        kept = ranks[~frequent[ranks]]
        left_out[d] = len(ranks) - len(kept)
        tokens.append(kept)
        docs.append(np.full(len(kept), d, dtype=np.int64))
    return np.concatenate(tokens), np.concatenate(docs), left_out


def candidate_pairs(sets: list[Any], t: float, cap: int) -> tuple[Any, Any]:
    """(i, j), i < j, sharing enough prefix shingles, within the size bound of J >= t."""
    import numpy as np

    n = len(sets)
    tokens, docs, left_out = prefix_tokens(sets, t, cap)
    order = np.lexsort((docs, tokens))
    tokens, docs = tokens[order], docs[order]
    # Every pair within each shingle's run of documents (runs of at most `cap`): an entry is
    # paired with each later entry of its run.
    starts = np.flatnonzero(np.r_[True, tokens[1:] != tokens[:-1]])
    run_end = np.repeat(np.r_[starts[1:], len(tokens)], np.diff(np.r_[starts, len(tokens)]))
    later = run_end - np.arange(len(tokens)) - 1
    if not later.any():
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    left = np.repeat(np.arange(len(tokens)), later)
    right = left + np.arange(len(left)) - np.repeat(np.cumsum(later) - later, later) + 1
    keys = [docs[left] * n + docs[right]]
    pairs, shared = np.unique(np.concatenate(keys), return_counts=True)
    a, b = np.divmod(pairs, n)
    sizes = np.array([len(s) for s in sets])
    small, large = np.minimum(sizes[a], sizes[b]), np.maximum(sizes[a], sizes[b])
    # A set of m shingles at J >= t with another shares at least ceil(t m) of them; of the
    # k rarest shared ones, those left out of either prefix are not counted.
    need = np.minimum(SHARED_PREFIX, np.ceil(t * small)) - np.minimum(left_out[a], left_out[b])
    fits = (small >= t * large) & (shared >= need)
    return a[fits], b[fits]


def similar_pairs(sets: list[Any], t: float, cap: int) -> dict[tuple[int, int], float]:
    """Every pair (i < j) at exact Jaccard >= t among the candidates (prefix filtering; a
    shingle in more than `cap` documents is not indexed, which can only miss a pair whose
    shared prefix shingles are that frequent), each verified on the whole sets."""
    import numpy as np

    pairs = {}
    for i, j in zip(*(x.tolist() for x in candidate_pairs(sets, t, cap))):
        inter = len(np.intersect1d(sets[i], sets[j], assume_unique=True))
        jac = inter / (len(sets[i]) + len(sets[j]) - inter)
        if jac >= t:
            pairs[(i, j)] = jac
    return pairs


def neighbours(pairs: dict[tuple[int, int], float], n: int) -> list[list[tuple[int, float]]]:
    out: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for (i, j), jac in pairs.items():
        out[i].append((j, jac))
        out[j].append((i, jac))
    return out


def score(near: list[list[tuple[int, float]]], removed: set[int]) -> dict[str, float]:
    """Precision of the removed set and recall of the removable set, strict and tolerant."""
    def precision(t: float) -> float:
        right = sum(1 for d in removed
                    if any(jac >= t and o not in removed for o, jac in near[d]))
        return right / len(removed) if removed else 1.0

    def recall(t: float) -> float:
        removable = [d for d in range(len(near)) if any(jac >= t for _, jac in near[d])]
        left = sum(1 for d in removable if d not in removed
                   and any(jac >= t and o not in removed for o, jac in near[d]))
        return 1 - left / len(removable) if removable else 1.0

    return {"precision": precision(0.8), "recall": recall(0.8),
            "precision_tol": precision(0.75), "recall_tol": recall(0.85)}


def greedy_removed(near: list[list[tuple[int, float]]], t: float = 0.8) -> int:
    """How many documents an exact dedup removes (in input order, a document goes when a kept
    earlier one is at J >= t): the size of the removable set."""
    kept: set[int] = set()
    for d in range(len(near)):
        if not any(jac >= t and o < d and o in kept for o, jac in near[d]):
            kept.add(d)
    return len(near) - len(kept)


# --- running and measuring -------------------------------------------------------------------

def tree_memory(pid: int, cpu: dict[int, float]) -> tuple[int, int]:
    """Sum of VmRSS and of RssAnon (kB) over a process and its descendants; records each
    one's own user+sys CPU seconds so far in `cpu`."""
    import psutil

    try:
        procs = [psutil.Process(pid)]
        procs += procs[0].children(recursive=True)
    except psutil.Error:
        return 0, 0
    rss = anon = 0
    tick = os.sysconf("SC_CLK_TCK")
    for p in procs:
        try:
            with open(f"/proc/{p.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu[p.pid] = (int(fields[11]) + int(fields[12])) / tick
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss += int(line.split()[1])
                    elif line.startswith("RssAnon:"):
                        anon += int(line.split()[1])
        except OSError:
            continue
    return rss, anon


def measure(cmd: list[str], log: Path) -> dict[str, Any]:
    """Runs cmd in its own process; wall, user+sys CPU of the whole tree, peak tree RSS and
    anonymous RSS (sampled), the load average. The CPU is getrusage of the children around
    the run, or the sum of the sampled processes' own CPU where larger: a pool's workers
    forked by a forkserver are not waited for by the process started here."""
    load = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        peak = [0, 0]
        sampled: dict[int, float] = {}

        def sample() -> None:
            while proc.poll() is None:
                rss, anon = tree_memory(proc.pid, sampled)
                peak[0], peak[1] = max(peak[0], rss), max(peak[1], anon)
                time.sleep(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        rc = proc.wait()
        sampler.join()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        sys.exit(f"{cmd[0]} failed ({rc}); its output: {log}\n{log.read_text()[-3000:]}")
    cpu = max((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
              sum(sampled.values()))
    return {"wall": wall, "cpu": cpu, "rss_mb": peak[0] / 1024, "anon_mb": peak[1] / 1024,
            "load": [round(x, 2) for x in load]}


def output_ids(out: Path) -> set[str]:
    """The ids a tool kept: the `id` column of every Parquet or Arrow file it wrote."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids: set[str] = set()
    for path in sorted(out.rglob("*")):
        if path.suffix == ".parquet":
            ids.update(pq.read_table(path, columns=["id"]).column("id").to_pylist())
        elif path.suffix == ".arrow" and not path.name.startswith("cache-"):
            with pa.memory_map(str(path)) as source:
                table = pa.ipc.open_stream(source).read_all()
            ids.update(table.column("id").to_pylist())
    return ids


def datatrove_main(argv: list[str]) -> None:
    """The four stages of datatrove's MinhashDedup with its defaults, 2 local workers."""
    from datatrove.executor.local import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.pipeline.writers import ParquetWriter

    inp, out, work = argv
    config = MinhashConfig()
    tasks = 2

    def reader() -> ParquetReader:
        return ParquetReader(inp, glob_pattern="*.parquet")

    stages = [
        ([reader(), MinhashDedupSignature(f"{work}/signatures", config=config)], tasks),
        # The bucket stage runs a multiple of num_buckets tasks (here one per bucket).
        ([MinhashDedupBuckets(f"{work}/signatures", f"{work}/buckets", config=config)],
         config.num_buckets),
        ([MinhashDedupCluster(f"{work}/buckets", f"{work}/remove_ids", config=config)], 1),
        ([reader(), MinhashDedupFilter(f"{work}/remove_ids"), ParquetWriter(out)], tasks),
    ]
    for number, (pipeline, count) in enumerate(stages):
        LocalPipelineExecutor(pipeline=pipeline, tasks=count, workers=min(tasks, count),
                              logging_dir=f"{work}/logs/{number}").run()


def text_dedup_command(python: str, inp: Path, out: Path, work: Path) -> list[str] | None:
    """text-dedup's MinHash CLI on the Parquet folder, or None when it is not importable."""
    probe = subprocess.run([python, "-c", "import text_dedup.minhash"], capture_output=True,
                           cwd=work)
    if probe.returncode != 0:
        return None
    return [python, "-m", "text_dedup.minhash", "--path", "parquet", "--data_files",
            str(inp / "*.parquet"), "--split", "train", "--cache_dir", str(work / "cache"),
            "--output", str(out), "--column", "text", "--threshold", "0.8",
            "--num_proc", "2"]


def configs(args: argparse.Namespace, corpus: Path, work: Path) -> list[dict[str, Any]]:
    mhdb = str(args.mhdb)
    inp = corpus / "parquet"
    out = []
    for shingle, note in (("char:5", "default"), ("word:5", "matched to datatrove")):
        if "mhdb" not in args.tools:
            break
        out.append({"tool": "mhdb dedup-files", "shingling": f"{shingle} ({note})",
                    "command": lambda o, w, s=shingle: [
                        mhdb, "dedup-files", str(inp), "--out", str(o), "--threshold", "0.8",
                        "--shingle", s, "--json"]})
    py = sys.executable
    if "datatrove" in args.tools:
        out.append({"tool": "datatrove MinhashDedup", "shingling": "word 5-grams (default)",
                    "command": lambda o, w: [py, "-m", "tools.bench.dedup_peers", "--datatrove",
                                             str(inp), str(o), str(w)]})
    if "text-dedup" in args.tools:
        td = text_dedup_command(py, inp, work / "probe", work)
        if td is None:
            print("text-dedup: `import text_dedup.minhash` fails here; left out", file=sys.stderr)
        else:
            out.append({"tool": "text-dedup minhash", "shingling": "default",
                        "command": lambda o, w: text_dedup_command(py, inp, o, w)})
    return out


def run_rounds(args: argparse.Namespace, corpus: Path, work: Path) -> list[dict[str, Any]]:
    tools = configs(args, corpus, work)
    for tool in tools:
        tool["runs"] = []
    for r in range(args.rounds):
        for tool in tools if r % 2 == 0 else list(reversed(tools)):
            out, tmp = work / "out", work / "tmp"
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            run = measure(tool["command"](out, tmp), work / "last.log")
            kept = output_ids(out)
            run["docs_out"] = len(kept)
            tool["kept"] = kept
            tool["runs"].append(run)
            print(f"round {r + 1}: {tool['tool']} [{tool['shingling']}] {run['wall']:.1f} s "
                  f"wall, {run['cpu']:.1f} s CPU, {run['rss_mb']:.0f} MB RSS "
                  f"({run['anon_mb']:.0f} anon), {run['docs_out']} docs out, "
                  f"load {run['load']}", file=sys.stderr, flush=True)
    shutil.rmtree(work / "out", ignore_errors=True)
    shutil.rmtree(work / "tmp", ignore_errors=True)
    return tools


# --- the report ------------------------------------------------------------------------------

def report(meta: dict[str, Any], tools: list[dict[str, Any]],
           truth: dict[str, Any]) -> str:
    lines = [f"{meta['docs']:,} documents ({meta['text_mb']} MB of text, {meta['shards']} "
             f"Parquet shards), t = 0.8; truth on {truth['docs']:,} documents "
             f"({truth['groups_note']}; shingles in more than {truth['cap']} documents not "
             f"indexed, so the pairs of "
             + ", ".join(f"{n} ({kind})" for kind, n in truth["uncovered"].items())
             + " documents may be missed); an exact dedup removes "
             + ", ".join(f"{n:,} ({kind})" for kind, n in truth["removable"].items()) + ".",
             "",
             "| tool | shingling | wall s (min / median) | CPU s | peak RSS MB (anon) "
             "| docs out | P | R | P tol | R tol | P word | R word |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for tool in tools:
        runs = tool["runs"]
        walls = [r["wall"] for r in runs]
        q, w = tool["quality"]["char"], tool["quality"]["word"]
        lines.append(
            f"| {tool['tool']} | {tool['shingling']} | {min(walls):.1f} / "
            f"{statistics.median(walls):.1f} | {statistics.median(r['cpu'] for r in runs):.1f} | "
            f"{max(r['rss_mb'] for r in runs):.0f} ({max(r['anon_mb'] for r in runs):.0f}) | "
            f"{runs[-1]['docs_out']:,} | {q['precision']:.3f} | {q['recall']:.3f} | "
            f"{q['precision_tol']:.3f} | {q['recall_tol']:.3f} | {w['precision']:.3f} | "
            f"{w['recall']:.3f} |")
    lines.append("")
    for mine in (t for t in tools if t["tool"].startswith("mhdb")):
        for peer in (t for t in tools if not t["tool"].startswith("mhdb")):
            a = statistics.median(r["wall"] for r in mine["runs"])
            b = statistics.median(r["wall"] for r in peer["runs"])
            lines.append(f"- wall, mhdb [{mine['shingling']}] / {peer['tool']}: {a / b:.3f} "
                         f"({b / a:.1f}x faster)")
    return "\n".join(lines)


def evaluate(corpus: Path, tools: list[dict[str, Any]], target: int, seed: int,
             cap: int) -> dict[str, Any]:
    rows = truth_subsample(corpus, target, seed)
    docs = read_rows(corpus, rows)
    total = sum(1 for _ in open(corpus / "groups.txt"))
    truth: dict[str, Any] = {"docs": len(docs), "removable": {}, "cap": cap, "uncovered": {},
                             "groups_note": "every document" if len(docs) == total
                             else "whole groups drawn at random"}
    ids = [key for key, _ in docs]
    for tool in tools:
        tool["quality"] = {}
    for kind in ("char", "word"):
        started = time.perf_counter()
        sets = shingle_arrays([text for _, text in docs], kind)
        near = neighbours(similar_pairs(sets, 0.75, cap), len(sets))
        truth["removable"][f"{kind} 5-grams"] = greedy_removed(near)
        left_out = prefix_tokens(sets, 0.75, cap)[2]
        truth["uncovered"][f"{kind} 5-grams"] = int((left_out >= SHARED_PREFIX).sum())
        print(f"truth, {kind} 5-grams: {sum(map(len, near)) // 2:,} pairs at J >= 0.75 in "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        for tool in tools:
            removed = {d for d, key in enumerate(ids) if key not in tool["kept"]}
            tool["quality"][kind] = score(near, removed)
    return truth


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--datatrove":
        return datatrove_main(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/dedup-peers"),
                    help="corpus (reused when made with the same --docs and --seed) and runs")
    ap.add_argument("--mhdb", type=Path, default=ROOT / "target" / "release" / "mhdb")
    ap.add_argument("--truth-docs", type=int, default=20000)
    ap.add_argument("--truth-cap", type=int, default=500,
                    help="truth: a shingle in more of the subsample's documents is not indexed")
    ap.add_argument("--tools", type=lambda v: v.split(","), default=["mhdb", "datatrove",
                    "text-dedup"], help="which to run, comma-separated (default: all three)")
    ap.add_argument("--results", type=Path, help="also write the runs and tables as JSON here")
    args = ap.parse_args()
    corpus = args.dir / f"corpus-{args.docs}-{args.seed}"
    meta = build_corpus(corpus, args.docs, args.seed)
    print(f"corpus: {meta}", file=sys.stderr, flush=True)
    work = args.dir / "work"
    work.mkdir(parents=True, exist_ok=True)
    tools = run_rounds(args, corpus, work)
    truth = evaluate(corpus, tools, args.truth_docs, args.seed, args.truth_cap)
    table = report(meta, tools, truth)
    print(table)
    if args.results:
        dump = [{k: v for k, v in t.items() if k not in ("kept", "command")} for t in tools]
        args.results.write_text(json.dumps({"corpus": meta, "truth": truth, "tools": dump,
                                            "table": table}, indent=1) + "\n")


if __name__ == "__main__":
    main()
