#!/usr/bin/env python3
"""Near-duplicate detection on CJK text: Unicode word shingles against char and word n-grams.

Builds a corpus from text on this machine (the Japanese and Chinese man pages under
/usr/share/man/{ja,zh_CN,zh_TW}, roff stripped, and the message catalogs
/usr/share/locale/{ja,zh_CN,zh_TW,ko}/LC_MESSAGES/*.mo, read with Python's gettext), cut into
documents of about 600 characters; plants edited and reformatted copies of some of them; then, for each
shingle scheme, finds the pairs of estimated Jaccard >= 0.8 with MinHash-LSH (mhdb's
MinHasher, k = 256, its band keys) and compares them with two truths:

- exact: the pairs whose exact Jaccard of the scheme's own shingle sets is >= 0.8 (computed
  from the sets of format/hashing.md's reference, tools/conformance/reference_sketch.py);
  precision and recall of the LSH against it;
- planted: the planted copies, each of which a reader calls a near-duplicate: the share of
  them each scheme finds. Half are edited (about 2% of the characters deleted, replaced or
  inserted; lines re-wrapped), half reformatted (full-width and ASCII punctuation swapped,
  re-wrapped to columns of 8 to 20 characters, breaking only inside CJK text).

    python3 -m venv /tmp/v && /tmp/v/bin/pip install xxhash uniseg==0.10.1 \\
        unicodedata2==16.0.0 numpy scipy ./python
    /tmp/v/bin/python -m tools.bench.unicode_words_quality [--docs 1500] [--planted 300]

Takes one to two minutes, most of it in the reference's pure-Python UAX #29 (uniseg segments
some 10,000-40,000 characters a second), which gives the exact shingle sets.
BENCHMARKS.md, "Unicode words on CJK text", has a run.
"""

from __future__ import annotations

import argparse
import gettext
import gzip
import importlib.util
import pathlib
import random
import re
import sys
import time

import mhdb
import numpy as np
import scipy.sparse as sp

REPO = pathlib.Path(__file__).resolve().parents[2]
SCHEMES = ["unicode-word:1", "unicode-word:2", "unicode-word:3", "char:3", "char:5", "word:3"]
THRESHOLD = 0.8
NUM_PERM = 256
# 16 bands of 8 rows over the first 128 slots: the S-curve's midpoint (1/16)^(1/8) = 0.71 sits
# below t = 0.8, so that few pairs at 0.8 are missed; the estimate over all 256 slots decides.
BANDS, ROWS = 16, 8
DOC_CHARS = 600


def load_reference():
    path = REPO / "tools" / "conformance" / "reference_sketch.py"
    spec = importlib.util.spec_from_file_location("reference_sketch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the corpus ------------------------------------------------------------------------------

ROFF_ESCAPES = re.compile(r"\\f[BIRPC0-9]|\\f\[[^\]]*\]|\\\(..|\\\[[^\]]*\]|\\[&|^%:]|\\s[-+]?\d")


def strip_roff(source: str) -> str:
    """The running text of a man page: requests dropped (their arguments kept for text
    macros), font and character escapes removed."""
    out = []
    for line in source.splitlines():
        if line.startswith(('.\\"', "'\\\"", '.\\}')):
            continue
        if line.startswith((".", "'")):
            name, _, rest = line[1:].partition(" ")
            if name in {"SH", "SS", "B", "I", "BI", "BR", "IR", "RB", "RI", "IB", "TP", "IP"}:
                line = rest.replace('"', "")
            else:
                continue
        line = ROFF_ESCAPES.sub("", line).replace("\\-", "-").replace("\\e", "\\")
        out.append(line)
    return "\n".join(out)


def man_pages(lang: str) -> list[str]:
    pages = []
    for path in sorted(pathlib.Path("/usr/share/man", lang).rglob("*")):
        if not path.is_file():
            continue
        raw = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
        try:
            pages.append(strip_roff(raw.decode("utf-8")))
        except UnicodeDecodeError:
            continue
    return pages


def catalogs(lang: str) -> list[str]:
    """Each catalog's translations, in msgid order, one per line."""
    out = []
    for path in sorted(pathlib.Path("/usr/share/locale", lang, "LC_MESSAGES").glob("*.mo")):
        try:
            with open(path, "rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog
        except (OSError, UnicodeDecodeError):
            continue
        texts = [v for k, v in sorted(catalog.items(), key=lambda kv: str(kv[0])) if k and v]
        out.append("\n".join(t for t in texts if isinstance(t, str)))
    return out


def chunks(text: str) -> list[str]:
    """Consecutive lines gathered into documents of about DOC_CHARS characters."""
    docs, cur, size = [], [], 0
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        cur.append(line)
        size += len(line)
        if size >= DOC_CHARS:
            docs.append("\n".join(cur))
            cur, size = [], 0
    if size >= DOC_CHARS // 3:
        docs.append("\n".join(cur))
    return docs


def cjk_share(text: str) -> float:
    cjk = sum(1 for c in text if "\u3040" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af")
    return cjk / max(1, len(text))


def corpus(max_docs: int, rng: random.Random) -> list[str]:
    texts = []
    for lang in ["ja", "zh_CN", "zh_TW"]:
        texts += man_pages(lang)
    for lang in ["ja", "zh_CN", "zh_TW", "ko"]:
        texts += catalogs(lang)
    docs = [d for t in texts for d in chunks(t) if cjk_share(d) >= 0.3]
    rng.shuffle(docs)
    return docs[:max_docs]


def edit(doc: str, rng: random.Random) -> str:
    """A near-duplicate as editors and re-publishers make them: about 2% of the characters
    deleted, replaced or inserted a few at a time, and line breaks added every 30 to 60
    characters (CJK text re-wrapped: each break becomes a space after normalization)."""
    chars = list(doc)
    for _ in range(max(1, len(chars) // 150)):
        at = rng.randrange(len(chars))
        op = rng.choice(["delete", "replace", "insert"])
        span = rng.randrange(1, 4)
        if op == "delete":
            del chars[at:at + span]
        elif op == "replace":
            chars[at:at + span] = rng.choices(chars, k=span)
        else:
            chars[at:at] = rng.choices(chars, k=span)
    out, line = [], 0
    for c in chars:
        out.append(c)
        line = 0 if c == "\n" else line + 1
        if line >= rng.randrange(30, 60):
            out.append("\n")
            line = 0
    return "".join(out)


FULLWIDTH = dict(zip("，。：；！？（）", ",.:;!?()"))


def is_cjk(c: str) -> bool:
    """Kana, CJK ideographs and CJK punctuation, between which lines may break (UAX #14)."""
    return "\u3000" <= c <= "\u9fff" or "\uff00" <= c <= "\uffef"


def reformat(doc: str, rng: random.Random) -> str:
    """The same words re-published in another layout: full-width punctuation and its ASCII
    twin swapped, and the text re-wrapped to narrow columns: a line break at the first place
    after every 8 to 20 characters where a line may break inside CJK text (between two kana,
    ideographs or CJK punctuation marks; each break is a space after normalization)."""
    swap = {**FULLWIDTH, **{v: k for k, v in FULLWIDTH.items()}}
    out, line, width = [], 0, rng.randrange(8, 21)
    for c, after in zip(doc, doc[1:] + "\n"):
        out.append(swap.get(c, c))
        line = 0 if c == "\n" else line + 1
        if line >= width and is_cjk(c) and is_cjk(after):
            out.append("\n")
            line = 0
    return "".join(out)


# --- truth and LSH ---------------------------------------------------------------------------

def exact_pairs(sets: list[set[bytes]]) -> set[tuple[int, int]]:
    """The pairs of exact Jaccard >= THRESHOLD, by a sparse product of the incidence matrix."""
    vocab: dict[bytes, int] = {}
    rows, cols = [], []
    for i, s in enumerate(sets):
        for x in s:
            rows.append(i)
            cols.append(vocab.setdefault(x, len(vocab)))
    m = sp.csr_matrix((np.ones(len(rows), dtype=np.int32), (rows, cols)),
                      shape=(len(sets), max(1, len(vocab))))
    inter = sp.triu(m @ m.T, k=1).tocoo()
    sizes = np.array([len(s) for s in sets], dtype=np.float64)
    union = sizes[inter.row] + sizes[inter.col] - inter.data
    keep = inter.data >= THRESHOLD * union
    return set(zip(inter.row[keep].tolist(), inter.col[keep].tolist()))


def lsh_pairs(hasher: mhdb.MinHasher, sigs: np.ndarray) -> tuple[set[tuple[int, int]], int]:
    """The pairs that share a band key and whose estimate is >= THRESHOLD; and the number of
    candidates compared."""
    keys = hasher.band_keys(sigs, BANDS, ROWS)
    candidates: set[tuple[int, int]] = set()
    for band in range(BANDS):
        buckets: dict[int, list[int]] = {}
        for doc, key in enumerate(keys[:, band].tolist()):
            buckets.setdefault(key, []).append(doc)
        for docs in buckets.values():
            candidates.update((a, b) for i, a in enumerate(docs) for b in docs[i + 1:])
    found = {(a, b) for a, b in candidates
             if np.count_nonzero(sigs[a] == sigs[b]) >= THRESHOLD * NUM_PERM}
    return found, len(candidates)


def ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "—"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1500)
    parser.add_argument("--planted", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    ref = load_reference()
    docs = corpus(args.docs, rng)
    originals = rng.sample(range(len(docs)), min(args.planted, len(docs)))
    edited, reformatted = set(), set()
    for n, i in enumerate(originals):
        copy = edit if n % 2 == 0 else reformat
        (edited if n % 2 == 0 else reformatted).add((i, len(docs)))
        docs.append(copy(docs[i], rng))
    planted = edited | reformatted
    chars = sum(len(d) for d in docs)
    print(f"corpus: {len(docs)} documents ({len(docs) - len(planted)} from man pages and "
          f"catalogs, {len(edited)} edited and {len(reformatted)} reformatted copies), "
          f"{chars / 1e6:.2f} M characters")
    print(f"LSH: k = {NUM_PERM}, {BANDS} bands x {ROWS} rows, t = {THRESHOLD}")
    print("| scheme | truth pairs (exact J >= 0.8) | found | precision | recall "
          "| edited copies found (exact J >= 0.8) | reformatted copies found (exact J >= 0.8) "
          "| signing MB/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    start = time.perf_counter()
    # The reference's tokens once (the slow part), then its shingles at every width.
    tokens = [ref.unicode_word_tokens(ref.normalize(d)) for d in docs]
    print(f"reference tokens of every document: {time.perf_counter() - start:.0f} s")
    megabytes = sum(len(d.encode()) for d in docs) / 1e6
    for scheme in SCHEMES:
        kind, n, folds = ref.parse_shingle(scheme)
        if kind == "unicode-word":
            sets = [set(ref.unicode_word_shingles(t, n)) for t in tokens]
        else:
            sets = [set(ref.shingles(d, kind, n)) for d in docs]
        truth = exact_pairs(sets)
        hasher = mhdb.MinHasher(num_perm=NUM_PERM, shingle=scheme)
        # Signing time: the best of 5 passes (a shared machine's noise is one-sided).
        signing = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            sigs = hasher.sketch_many(docs)
            signing = min(signing, time.perf_counter() - start)
        found, _ = lsh_pairs(hasher, sigs)
        hits = len(found & truth)
        print(f"| `{scheme}` | {len(truth)} | {len(found)} | {ratio(hits, len(found))} "
              f"| {ratio(hits, len(truth))} "
              f"| {ratio(len(found & edited), len(edited))} "
              f"({ratio(len(truth & edited), len(edited))}) "
              f"| {ratio(len(found & reformatted), len(reformatted))} "
              f"({ratio(len(truth & reformatted), len(reformatted))}) "
              f"| {megabytes / signing:.0f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
