#!/usr/bin/env python3
"""Quality and speed of `mhdb` against exact Jaccard and against datasketch / rensa.

Usage:  python3 -m tools.bench.quality [--docs N] [--real-docs N] [--seeds N] [--speed-docs N]
        [--skip-peers] [--speed-only] [--keep DIR]

1. Builds two corpora: *planted* (generated documents plus edited copies at known edit rates)
   and *real* (all paragraph chunks of the Python standard library's source files, about 15,700,
   which contain natural near-duplicates such as repeated headers, similar tests and the
   generated codec tables of `encodings/`).
2. Computes the exact Jaccard similarity of every pair of documents whose character 5-gram
   sets (after mhdb's default normalization) overlap by at least 0.75, exactly, with prefix
   filtering (a pair with J >= t must share one of the rarest |A| - ceil(t|A|) + 1 shingles).
3. Runs `mhdb create` / `add` / `dedup` at t = 0.8 with default settings and scores the pairs:
   recall over pairs with J >= 0.85, precision counting pairs with J >= 0.75 as right, and the
   strict recall and precision at 0.8. Then the same with `--seeds` other hash seeds, reported
   as mean (min-max): pairs just above 0.85 are missed with probability about 5% each at
   k = 128, and pairs sharing a document miss together, so one seed on a few dozen pairs is a
   noisy figure.
4. Times `mhdb add` (MB/s of text), `mhdb dedup` and `mhdb query --jsonl`, and, in the same run,
   datasketch (MinHash + MinHashLSH) and rensa (RMinHash + RMinHashLSH) on the same documents,
   installed from PyPI into tools/.venv.
"""

import argparse
import json
import math
import random
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
MHDB = ROOT / "target" / "release" / "mhdb"
WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
TABLE = {ord(c): " " for c in WHITE_SPACE}


def normalize(text):
    """mhdb's default normalization (format/hashing.md section 2)."""
    return " ".join(text.lower().translate(TABLE).split(" ")).strip() if text else ""


def shingles(text, n=5):
    t = " ".join(w for w in normalize(text).split(" ") if w)
    if not t:
        return frozenset()
    if len(t) <= n:
        return frozenset([t])
    return frozenset(t[i:i + n] for i in range(len(t) - n + 1))


def planted_corpus(n, rng):
    vocab = [f"{a}{b}" for a in ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "de", "fa", "gu", "he"]
             for b in ["ran", "mel", "dos", "tik", "bur", "sal", "vem", "quo", "lin", "zar", "pex", "hon",
                       "dur", "mab", "sor", "tel", "vix", "wan", "yor", "zet"]]
    docs = []
    base = int(n * 0.8)
    for i in range(base):
        words = [rng.choice(vocab) for _ in range(rng.randint(120, 260))]
        docs.append((f"p{i}", " ".join(words)))
    for j in range(n - base):
        src_id, src = docs[rng.randrange(base)]
        words = src.split(" ")
        rate = rng.choice([0.005, 0.01, 0.02, 0.04, 0.06, 0.1, 0.15])
        for k in range(len(words)):
            if rng.random() < rate:
                words[k] = rng.choice(vocab)
        docs.append((f"{src_id}-copy{j}", " ".join(words)))
    return docs


def real_corpus(limit, rng):
    """Paragraph chunks of about 1.5 KB from every stdlib source file, shuffled; `limit` of them
    (all when `limit` is 0)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)
    docs = []
    for p in files:
        try:
            text = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        chunk = []
        size = 0
        for para in text.split("\n\n"):
            chunk.append(para)
            size += len(para)
            if size >= 1500:
                docs.append((f"{p.relative_to(stdlib)}#{len(docs)}", "\n\n".join(chunk)))
                chunk, size = [], 0
    rng.shuffle(docs)
    return docs[:limit] if limit else docs


def exact_pairs(docs, t=0.75):
    """All pairs with Jaccard >= t, exactly (prefix filtering)."""
    sets = [shingles(text) for _, text in docs]
    df = defaultdict(int)
    for s in sets:
        for g in s:
            df[g] += 1
    order = {}
    index = defaultdict(list)
    out = {}
    for i, s in enumerate(sets):
        if not s:
            continue
        ranked = sorted(s, key=lambda g: (df[g], g))
        prefix = len(ranked) - math.ceil(t * len(ranked)) + 1
        cands = set()
        for g in ranked[:prefix]:
            cands.update(index[g])
        for j in cands:
            other = sets[j]
            if min(len(s), len(other)) < t * max(len(s), len(other)):
                continue
            inter = len(s & other)
            jac = inter / (len(s) + len(other) - inter)
            if jac >= t:
                out[(j, i)] = jac
        for g in ranked[:prefix]:
            index[g].append(i)
        order[i] = ranked
    return out


def run(args, **kw):
    return subprocess.run([str(MHDB), *args], check=True, capture_output=True, text=True, **kw)


def write_jsonl(path, docs):
    with open(path, "w") as f:
        for k, t in docs:
            f.write(json.dumps({"id": k, "text": t}) + "\n")


def score(name, docs, work, seeds):
    """Scores `mhdb dedup` at t = 0.8 on `docs`: one table row with the default settings, and
    one with the mean (min-max) over other hash seeds, since one seed is one draw of the
    estimator's noise and a corpus with few pairs near the threshold can be lucky or unlucky."""
    ids = {k: i for i, (k, _) in enumerate(docs)}
    truth = exact_pairs(docs)
    slug = name.split()[0]
    data = work / f"{slug}.jsonl"
    write_jsonl(data, docs)
    high = [p for p, j in truth.items() if j >= 0.85]
    at_t = [p for p, j in truth.items() if j >= 0.8]
    rows = []
    for seed in [None, *seeds]:
        db = work / f"{slug}-{seed or 'default'}.db"
        run(["create", str(db), "--threshold", "0.8", *(["--seed", str(seed)] if seed else [])])
        run(["add", str(db), str(data)])
        found = {}
        for line in run(["dedup", str(db), "--threshold", "0.8"]).stdout.splitlines():
            p = json.loads(line)
            a, b = ids[p["a"]], ids[p["b"]]
            found[(min(a, b), max(a, b))] = p["jaccard"]
        rows.append((
            len(found),
            sum(1 for p in high if p in found) / max(1, len(high)),
            sum(1 for p in found if truth.get(p, 0) >= 0.75) / max(1, len(found)),
            sum(1 for p in at_t if p in found) / max(1, len(at_t)),
            sum(1 for p in found if truth.get(p, 0) >= 0.8) / max(1, len(found)),
        ))
    d = rows[0]
    print(f"| {name}, default seed | {len(docs)} | {len(high)} | {d[0]} | {d[1]:.4f} | {d[2]:.4f} "
          f"| {d[3]:.4f} | {d[4]:.4f} |")
    if len(rows) > 1:
        cols = list(zip(*rows[1:]))
        cells = [f"{sum(c) / len(c):.4f} ({min(c):.4f}-{max(c):.4f})" for c in cols[1:]]
        print(f"| {name}, mean (min-max) of seeds {', '.join(map(str, seeds))} | {len(docs)} "
              f"| {len(high)} | {sum(cols[0]) / len(cols[0]):.0f} | " + " | ".join(cells) + " |")
    return d[1], d[2]


def peers(docs, work):
    venv = ROOT / "tools" / ".venv"
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "datasketch", "rensa"], check=True)
    data = work / "speed.jsonl"
    write_jsonl(data, docs)
    script = r'''
import json, sys, time
docs = [json.loads(l) for l in open(sys.argv[1])]
WS = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
T = {ord(c): " " for c in WS}
def sh(text):
    t = " ".join(w for w in text.lower().translate(T).split(" ") if w)
    return [t[i:i+5] for i in range(max(1, len(t) - 4))]
out = {}
try:
    from datasketch import MinHash, MinHashLSH
    t0 = time.perf_counter()
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    sigs = []
    for d in docs:
        m = MinHash(num_perm=128)
        m.update_batch([s.encode() for s in sh(d["text"])])
        lsh.insert(d["id"], m)
        sigs.append(m)
    t1 = time.perf_counter()
    for m in sigs[:2000]:
        lsh.query(m)
    t2 = time.perf_counter()
    for d in docs[:2000]:
        m = MinHash(num_perm=128)
        m.update_batch([s.encode() for s in sh(d["text"])])
        lsh.query(m)
    t3 = time.perf_counter()
    by_id = {d["id"]: m for d, m in zip(docs, sigs)}
    for m in sigs[:2000]:
        [c for c in lsh.query(m) if m.jaccard(by_id[c]) >= 0.8]
    t4 = time.perf_counter()
    nq = min(2000, len(sigs))
    out["datasketch"] = (len(docs) / (t1 - t0), nq / (t2 - t1), nq / (t3 - t2), nq / (t4 - t3))
except Exception as e:
    out["datasketch"] = str(e)
try:
    from rensa import RMinHash, RMinHashLSH
    t0 = time.perf_counter()
    lsh = RMinHashLSH(threshold=0.8, num_perm=128, num_bands=16)
    sigs = []
    for i, d in enumerate(docs):
        m = RMinHash(num_perm=128, seed=42)
        m.update(sh(d["text"]))
        lsh.insert(i, m)
        sigs.append(m)
    t1 = time.perf_counter()
    for m in sigs[:2000]:
        lsh.query(m)
    t2 = time.perf_counter()
    for d in docs[:2000]:
        m = RMinHash(num_perm=128, seed=42)
        m.update(sh(d["text"]))
        lsh.query(m)
    t3 = time.perf_counter()
    for m in sigs[:2000]:
        [c for c in lsh.query(m) if m.jaccard(sigs[c]) >= 0.8]
    t4 = time.perf_counter()
    nq = min(2000, len(sigs))
    out["rensa"] = (len(docs) / (t1 - t0), nq / (t2 - t1), nq / (t3 - t2), nq / (t4 - t3))
except Exception as e:
    out["rensa"] = str(e)
print(json.dumps(out))
'''
    res = subprocess.run([str(py), "-c", script, str(data)], check=True, capture_output=True, text=True)
    return json.loads(res.stdout)


def speed(docs, work, with_peers):
    data = work / "speed.jsonl"
    write_jsonl(data, docs)
    size = data.stat().st_size
    db = work / "speed.db"
    run(["create", str(db)])
    t0 = time.perf_counter()
    run(["add", str(db), str(data)])
    add = time.perf_counter() - t0
    t0 = time.perf_counter()
    run(["dedup", str(db)])
    dedup = time.perf_counter() - t0
    queries = work / "queries.jsonl"
    write_jsonl(queries, docs[:20000])
    t0 = time.perf_counter()
    run(["query", str(db), "--jsonl", str(queries)])
    query = time.perf_counter() - t0
    nq = min(20000, len(docs))
    # Queries by precomputed signature go through the library (the CLI takes text): the
    # database harness signs the texts first, then times `Db::query` on one thread (every
    # candidate verified) and `Db::query_batch` on every core.
    harness = subprocess.run(
        ["cargo", "bench", "--quiet", "--bench", "db_harness", "--", "--text-queries", str(db),
         str(queries), "--queries", str(nq)],
        cwd=ROOT, check=True, capture_output=True, text=True)
    lib = json.loads(harness.stdout.strip().splitlines()[-1])
    print(f"| mhdb | {len(docs) / add:,.0f} docs/s ({size / 1e6 / add:.0f} MB/s of JSONL, incl. process start) "
          f"| {lib['one_thread']:,.0f} queries/s one thread, {lib['all_cores']:,.0f} on all cores (verified) "
          f"| {nq / query:,.0f} queries/s (process start, open, JSON in and out) "
          f"| dedup of {len(docs):,} docs in {dedup:.2f} s |")
    if with_peers:
        for name, v in peers(docs, work).items():
            if isinstance(v, str):
                print(f"| {name} | unavailable: {v} | | | |")
            else:
                print(f"| {name} | {v[0]:,.0f} docs/s (insert incl. hashing) | {v[1]:,.0f} queries/s "
                      f"(candidates, unverified) | {v[2]:,.0f} queries/s | {v[3]:,.0f} queries/s, "
                      f"precomputed signature, candidates verified by their `jaccard` |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=4000, help="documents of the planted corpus")
    ap.add_argument("--real-docs", type=int, default=0,
                    help="documents of the real corpus (default 0: every chunk of the stdlib)")
    ap.add_argument("--seeds", type=int, default=4, help="extra hash seeds to score (0: none)")
    ap.add_argument("--speed-docs", type=int, default=50000)
    ap.add_argument("--skip-peers", action="store_true")
    ap.add_argument("--speed-only", action="store_true", help="skip the quality tables")
    ap.add_argument("--keep", type=Path)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    rng = random.Random(7)
    work = a.keep or Path(tempfile.mkdtemp(prefix="mhdb-quality-"))
    work.mkdir(parents=True, exist_ok=True)
    if not a.speed_only:
        print("## Quality at t = 0.8 (default settings), against exact Jaccard of char 5-gram sets\n")
        print("| corpus | docs | pairs J>=0.85 | pairs reported | recall (J>=0.85) "
              "| precision (J>=0.75 right) | strict recall (J>=0.8) | strict precision |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        seeds = list(range(1, a.seeds + 1))
        score("planted", planted_corpus(a.docs, rng), work, seeds)
        score("real (Python stdlib chunks)", real_corpus(a.real_docs, rng), work, seeds)
    print("\n## Speed (same documents, same run)\n")
    print("| system | insert | query, precomputed signature | query by text (signing included) | dedup "
          "or, for peers, query + verifying candidates at 0.8 |")
    print("| --- | --- | --- | --- | --- |")
    speed(planted_corpus(a.speed_docs, rng), work, not a.skip_peers)


if __name__ == "__main__":
    main()
