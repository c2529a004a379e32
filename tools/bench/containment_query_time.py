#!/usr/bin/env python3
"""Containment query time with the sketches made: mhdb's Python API against datasketch's
MinHashLSHEnsemble, in one process, interleaved.

Usage:  python3 -m venv /tmp/contain-venv
        /tmp/contain-venv/bin/pip install datasketch xxhash numpy ./python
        /tmp/contain-venv/bin/python tools/bench/containment_corpus.py --out DIR
        OPENBLAS_NUM_THREADS=1 /tmp/contain-venv/bin/python \
            tools/bench/containment_query_time.py --corpus DIR

datasketch is timed as containment_quality.py times it: `ensemble.query(minhash, size)` over
`MinHash`es made beforehand (128 permutations, 16 partitions), its candidates collected into a
set. mhdb is timed the same way: `Index.query(signature=..., set_size=..., containment=t)`
over signatures and set sizes made beforehand, its (key, containment, jaccard) answers in a
list, on an index of the same pages without stored sets (`create --metric containment`, 512
slots of 4 bits). Each round times every query with one library, then the other (the order
alternating between rounds); the table gives the fastest and the median round per query, and
the load average is printed with each round. Both run on the calling thread
(`OPENBLAS_NUM_THREADS=1`: numpy's BLAS threads otherwise spin beside them on a small
machine).
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import mhdb
from containment_corpus import shingle_set
from containment_quality import THRESHOLDS, datasketch_minhash, read_jsonl, write_keyed
from datasketch import MinHashLSHEnsemble


def per_query(run, queries):
    start = time.perf_counter()
    for q in queries:
        run(q)
    return (time.perf_counter() - start) / len(queries)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/containment-corpus"))
    parser.add_argument("--mhdb", default=str(Path(__file__).resolve().parents[2]
                                               / "target" / "release" / "mhdb"))
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    pages = read_jsonl(args.corpus / "corpus.jsonl")
    queries = read_jsonl(args.corpus / "queries.jsonl")
    hmins = [datasketch_minhash(shingle_set(p["text"])) for p in pages]
    qmins = {q["id"]: datasketch_minhash(shingle_set(q["text"])) for q in queries}
    with tempfile.TemporaryDirectory() as tmp:
        db_path, corpus = Path(tmp) / "db", Path(tmp) / "corpus.jsonl"
        write_keyed(corpus, pages)
        subprocess.run([args.mhdb, "create", str(db_path), "--metric", "containment"],
                       check=True, capture_output=True)
        subprocess.run([args.mhdb, "add", str(db_path), str(corpus)], check=True,
                       capture_output=True)
        index = mhdb.Index.open(db_path, read_only=True)
        hasher = index.hasher
        sketches = [(hasher.sketch(q["text"]), int(hasher.set_sizes([q["text"]])[0]))
                    for q in queries]
        times = {}
        for t in THRESHOLDS:
            ensemble = MinHashLSHEnsemble(threshold=t, num_perm=128, num_part=16)
            ensemble.index([(pid, hmins[pid], p["size"]) for pid, p in enumerate(pages)])

            def peer(q, ensemble=ensemble):
                return set(ensemble.query(qmins[q["id"]], q["size"]))

            def ours(sketch, t=t):
                return index.query(signature=sketch[0], set_size=sketch[1], containment=t)

            runs = {"datasketch": lambda: per_query(peer, queries),
                    "mhdb": lambda: per_query(ours, sketches)}
            for name in runs:
                times[(t, name)] = []
            for r in range(args.rounds):
                order = list(runs) if r % 2 == 0 else list(reversed(runs))
                for name in order:
                    times[(t, name)].append(runs[name]())
                print(f"t = {t} round {r + 1}: load average {os.getloadavg()[0]:.2f}",
                      flush=True)
        index.close()
    print(f"{len(pages)} pages, {len(queries)} queries, ms per query (fastest / median of "
          f"{args.rounds} rounds)")
    print(f"{'t':>4} {'datasketch':>18} {'mhdb':>18} {'ratio (median)':>15}")
    for t in THRESHOLDS:
        peer, ours = times[(t, "datasketch")], times[(t, "mhdb")]
        print(f"{t:4.1f} {min(peer) * 1e3:8.3f} / {statistics.median(peer) * 1e3:7.3f} "
              f"{min(ours) * 1e3:8.3f} / {statistics.median(ours) * 1e3:7.3f} "
              f"{statistics.median(peer) / statistics.median(ours):15.1f}")


if __name__ == "__main__":
    main()
