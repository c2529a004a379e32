#!/usr/bin/env python3
"""Containment search on the planted corpus: mhdb's containment index (through the CLI)
against datasketch's MinHashLSHEnsemble, and optionally a Python model of
format/containment.md (size classes, class-seeded bandings, per-class (b, r), the estimator).

Usage:  python3 -m venv /tmp/contain-venv
        /tmp/contain-venv/bin/pip install datasketch xxhash numpy
        cargo build --release
        /tmp/contain-venv/bin/python tools/bench/containment_corpus.py --out DIR
        /tmp/contain-venv/bin/python tools/bench/containment_quality.py --corpus DIR [--model]

mhdb: `create --metric containment --threshold t` (and `--store-sets`), `add` of the corpus
(its build time and peak RSS), `query --jsonl --containment t` of every query in one process
(mean wall time per query, process start included, and peak RSS; `query --jsonl` answers a
window of queries on every core at once, so this is not a time per core:
containment_query_time.py times one query at a time), also with `--recall 0.95`.

For t = 0.5, 0.7, 0.9 it prints recall and precision against the exact truth of
tools/bench/containment_corpus.py (all pairs, and the pairs whose query is at least 1/8 of the
page), build time, mean query time and peak traced memory of the index build. datasketch:
`MinHashLSHEnsemble(threshold=t, num_perm=128, num_part=16)` over datasketch `MinHash`es of the
same shingle hashes; its answers are its candidates. The model: OPH signatures of 512 slots
(tools/conformance/reference_sketch.py, hashing.md §5), band keys of the five default bandings
within each size class, candidates verified by the containment estimate from 4-bit slots
("model") or by exact containment over the shingle sets ("model + sets"). The model's times
are Python's, not mhdb's.
"""

import argparse
import json
import subprocess
import tempfile
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path

import numpy as np
from containment_corpus import REF, shingle_set
from datasketch import MinHash, MinHashLSHEnsemble

SLOTS = 512
BITS = 4
BANDINGS = ((1, 64), (2, 32), (3, 24), (5, 16), (8, 12))  # (rows, most bands)
SIMPSON = 256
THRESHOLDS = (0.5, 0.7, 0.9)


def size_class(s):
    if s == 0:
        return 0
    e = s.bit_length() - 1
    return 1 + 2 * e + (1 if s * s >= 1 << (2 * e + 1) else 0)


def class_upper(c):
    if c == 0:
        return 0
    e, half = divmod(c - 1, 2)
    if half == 0:
        n = 1 << (2 * e + 1)
        root = int(np.sqrt(float(n)))
        while root * root < n:
            root += 1
        while (root - 1) * (root - 1) >= n:
            root -= 1
        return root - 1
    return (1 << (e + 1)) - 1


COMBOS = [(b, r) for r, most in BANDINGS for b in range(1, most + 1)]
B = np.array([b for b, _ in COMBOS], dtype=float)[:, None]
R = np.array([r for _, r in COMBOS], dtype=float)[:, None]
WEIGHTS = np.ones(SIMPSON + 1)
WEIGHTS[1:-1:2], WEIGHTS[2:-1:2] = 4, 2


def choose(j, cache={}):  # noqa: B006 (a cache on purpose)
    """format/containment.md §3: (b, r) over the stored bandings for Jaccard threshold j."""
    key = round(j, 4)
    if key not in cache:
        lo, hi = np.linspace(0, j, SIMPSON + 1), np.linspace(j, 1, SIMPSON + 1)
        fp = (1 - (1 - lo[None, :] ** R) ** B) @ WEIGHTS * j / SIMPSON / 3
        fn = ((1 - hi[None, :] ** R) ** B) @ WEIGHTS * (1 - j) / SIMPSON / 3
        recall = 1 - (1 - j ** R[:, 0]) ** B[:, 0]
        cost = 0.5 * fp + 0.5 * fn
        ok = recall >= 0.95
        order = sorted(range(len(COMBOS)), key=lambda i: (
            not ok[i], cost[i] if ok[i] else -recall[i], COMBOS[i][0], -COMBOS[i][1]))
        cache[key] = COMBOS[order[0]]
    return cache[key]


def estimate_containment(j_hat, q, x):
    if q == 0:
        return 0.0
    return min(max(j_hat * (q + x) / (q * (1 + j_hat)), 0.0), min(1.0, x / q))


class Model:
    """The design over Python dicts: (class, banding, band, slots) → pages."""

    def __init__(self):
        self.buckets = defaultdict(list)
        self.populated = set()

    def add(self, pid, slots, size):
        c = size_class(size)
        self.populated.add(c)
        for g, (r, most) in enumerate(BANDINGS):
            for i in range(most):
                self.buckets[(c, g, i, tuple(slots[i * r:(i + 1) * r]))].append(pid)

    def candidates(self, slots, q, t):
        found = set()
        for c in sorted(self.populated):
            u = class_upper(c)
            if u < t * q:
                continue
            b, r = choose(t * q / (q + u - t * q))
            g = [rows for rows, _ in BANDINGS].index(r)
            for i in range(b):
                found.update(self.buckets.get((c, g, i, tuple(slots[i * r:(i + 1) * r])), ()))
        return found


def low4(slots):
    return np.array(slots, dtype=np.uint64) & np.uint64(15)


def jaccard_hat(a4, b4):
    p = float(np.count_nonzero(a4 == b4)) / SLOTS
    chance = 2.0 ** -BITS
    return min(max((p - chance) / (1 - chance), 0.0), 1.0)


def low32(h):
    return h & 0xFFFFFFFF


def datasketch_minhash(hashes):
    m = MinHash(num_perm=128, hashfunc=low32)
    m.update_batch(list(hashes))
    return m


def score(answers, truth, t, sizes, q_sizes, at_least_eighth):
    """Recall and precision of {query: set(pages)} against truth at t."""
    hit = want = got = 0
    for qid, pages in answers.items():
        relevant = {p for p, c in truth[qid].items() if c >= t}
        if at_least_eighth:
            keep = {p for p in set(pages) | relevant if sizes[p] <= 8 * q_sizes[qid]}
            pages, relevant = set(pages) & keep, relevant & keep
        hit += len(relevant & set(pages))
        want += len(relevant)
        got += len(pages)
    return (hit / want if want else 1.0), (hit / got if got else 1.0)


def timed(build):
    start = time.perf_counter()
    index = build()
    elapsed = time.perf_counter() - start
    tracemalloc.start()
    build()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return index, elapsed, peak


def run_peer(t, pages, queries, hmins, qmins):
    def build():
        ensemble = MinHashLSHEnsemble(threshold=t, num_perm=128, num_part=16)
        ensemble.index([(pid, hmins[pid], p["size"]) for pid, p in enumerate(pages)])
        return ensemble
    ensemble, build_s, peak = timed(build)
    start = time.perf_counter()
    answers = {q["id"]: set(ensemble.query(qmins[q["id"]], q["size"])) for q in queries}
    return answers, build_s, (time.perf_counter() - start) / len(queries), peak


def run_model(t, pages, queries, sigs, qsigs, sets, qsets):
    def build():
        model = Model()
        for pid, p in enumerate(pages):
            model.add(pid, sigs[pid], p["size"])
        return model
    model, build_s, peak = timed(build)
    low = [low4(s) for s in sigs]
    start = time.perf_counter()
    cands, estimated, exact = {}, {}, {}
    for q in queries:
        qid, size = q["id"], q["size"]
        found = model.candidates(qsigs[qid], size, t)
        q4 = low4(qsigs[qid])
        cands[qid] = found
        estimated[qid] = {p for p in found if estimate_containment(
            jaccard_hat(q4, low[p]), size, pages[p]["size"]) >= t}
    query_s = (time.perf_counter() - start) / len(queries)
    for q in queries:
        qid = q["id"]
        exact[qid] = {p for p in cands[qid]
                      if len(qsets[qid] & sets[p]) >= t * len(qsets[qid])}
    return cands, estimated, exact, build_s, query_s, peak


def run_measured(cmd, stdout=None):
    """Runs `cmd` under /usr/bin/time; returns (wall seconds, peak RSS bytes)."""
    with tempfile.NamedTemporaryFile("r") as rss:
        start = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-o", rss.name, "-f", "%M", *cmd], check=True,
                       stdout=stdout)
        elapsed = time.perf_counter() - start
        return elapsed, int(rss.read().strip().splitlines()[-1]) * 1024


def write_keyed(path, rows):
    """`rows` as mhdb's input: the id as text (keys are text)."""
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps({"id": str(row["id"]), "text": row["text"]}) + "\n")


def run_mhdb(mhdb, t, pages, queries, store_sets, recall=None):
    """mhdb's answers {query: set(page ids)}, build seconds, seconds per query, peak RSS;
    `recall`: `query --recall` (a wanted recall at the threshold, decided by estimate)."""
    with tempfile.TemporaryDirectory() as tmp:
        db, corpus = Path(tmp) / "db", Path(tmp) / "corpus.jsonl"
        write_keyed(corpus, pages)
        flags = ["--store-sets"] if store_sets else []
        subprocess.run([mhdb, "create", str(db), "--metric", "containment", "--threshold",
                        str(t), *flags], check=True, capture_output=True)
        build_s, build_rss = run_measured([mhdb, "add", str(db), str(corpus)])
        qpath = Path(tmp) / "queries.jsonl"
        write_keyed(qpath, queries)
        answers_path = Path(tmp) / "answers.jsonl"
        with open(answers_path, "w", encoding="utf-8") as out:
            wanted = ["--recall", str(recall)] if recall is not None else []
            query_s, query_rss = run_measured(
                [mhdb, "query", str(db), "--jsonl", str(qpath), "--containment", str(t),
                 *wanted], stdout=out)
        answers = {int(row["id"]): {int(m["id"]) for m in row["matches"]}
                   for row in read_jsonl(answers_path)}
    return answers, build_s, query_s / len(queries), max(build_rss, query_rss)


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/containment-corpus"))
    parser.add_argument("--mhdb", default=str(Path(__file__).resolve().parents[2]
                                               / "target" / "release" / "mhdb"))
    parser.add_argument("--model", action="store_true", help="also run the Python model")
    args = parser.parse_args()
    pages = read_jsonl(args.corpus / "corpus.jsonl")
    queries = read_jsonl(args.corpus / "queries.jsonl")
    truth = defaultdict(dict)
    for row in read_jsonl(args.corpus / "truth.jsonl"):
        truth[row["query"]][row["page"]] = row["containment"]
    sets = [shingle_set(p["text"]) for p in pages]
    qsets = [shingle_set(q["text"]) for q in queries]
    sigs = [REF.oph(list(s), SLOTS, 0) for s in sets] if args.model else []
    qsigs = [REF.oph(list(s), SLOTS, 0) for s in qsets] if args.model else []
    hmins = [datasketch_minhash(s) for s in sets]
    qmins = [datasketch_minhash(s) for s in qsets]
    sizes = [p["size"] for p in pages]
    q_sizes = [q["size"] for q in queries]
    print(f"{len(pages)} pages, {len(queries)} queries; recall / precision over all pairs, "
          "then over pairs whose query is >= 1/8 of the page")
    print(f"{'t':>4} {'method':<22} {'recall':>7} {'prec':>6} {'rec≥1/8':>8} {'prec≥1/8':>9} "
          f"{'build s':>8} {'query ms':>9} {'peak MB':>8}")
    for t in THRESHOLDS:
        peer, build_s, query_s, peak = run_peer(t, pages, queries, hmins, qmins)
        rows = [("datasketch ensemble", peer, build_s, query_s, peak)]
        for store_sets, recall, name in ((False, None, "mhdb (estimate)"),
                                         (False, 0.95, "mhdb (est., recall .95)"),
                                         (True, None, "mhdb + sets (exact)")):
            rows.append((name, *run_mhdb(args.mhdb, t, pages, queries, store_sets, recall)))
        if args.model:
            cands, est, exact, mbuild, mquery, mpeak = run_model(
                t, pages, queries, sigs, qsigs, sets, qsets)
            rows += [("model candidates", cands, mbuild, mquery, mpeak),
                     ("model (estimate)", est, None, None, None),
                     ("model + sets (exact)", exact, None, None, None)]
        for name, answers, b, qt, pk in rows:
            rec, prec = score(answers, truth, t, sizes, q_sizes, False)
            rec8, prec8 = score(answers, truth, t, sizes, q_sizes, True)
            extra = (f"{b:8.2f} {qt * 1000:9.2f} {pk / 2**20:8.1f}" if b is not None
                     else f"{'':>8} {'':>9} {'':>8}")
            print(f"{t:4.1f} {name:<22} {rec:7.3f} {prec:6.3f} {rec8:8.3f} {prec8:9.3f} {extra}")


if __name__ == "__main__":
    main()
