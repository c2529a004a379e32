#!/usr/bin/env python3
"""A corpus of real pages with planted containment, and its exact truth.

Usage:  python3 tools/bench/containment_corpus.py [--pages N] [--queries N] [--seed S]
        [--min-truth C] [--out DIR]

Pages are the manual pages installed on this machine (/usr/share/man/man*/*.gz, roff stripped
to text), cut to at most 24,000 characters. Each query is a passage of one page (its source),
of 1/1, 1/2, 1/4, 1/8 or 1/16 of the size of another page (its host); a leading fraction of the
passage (1, 0.9, 0.75 or 0.6) is inserted into the host at a word boundary. So a query is
contained in its source (containment about 1) and partly in its host, and by chance in others.

Writes to --out (default /tmp/containment-corpus):
- corpus.jsonl:  {"id", "text", "size"}: size is the number of distinct shingle hashes;
- queries.jsonl: {"id", "text", "size", "source", "host", "ratio", "fraction"};
- truth.jsonl:   {"query", "page", "containment"} for every pair with containment at least
  --min-truth, exact over char 5-gram shingle hashes under format/hashing.md's default
  normalization, computed by tools/conformance/reference_sketch.py (needs `xxhash`).
Deterministic for a seed and the same installed manual pages.
"""

import argparse
import gzip
import json
import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
MAX_PAGE_CHARS = 24_000
MIN_PAGE_CHARS = 1_500
RATIOS = (1, 2, 4, 8, 16)
FRACTIONS = (1.0, 0.9, 0.75, 0.6)
SEED = 0


# tools/conformance/reference_sketch.py, the independent implementation of hashing.md.
sys.path.insert(0, str(ROOT / "tools" / "conformance"))
import reference_sketch as REF  # noqa: E402

SHINGLE_SEED = REF.derive("oph", SEED, "shingle")


def shingle_set(text):
    """Distinct char 5-gram hashes of `text` (hashing.md §2-§3, defaults, scheme oph, seed 0)."""
    return set(REF.shingle_hashes(text, "char", 5, SHINGLE_SEED))


ROFF_ESCAPES = re.compile(r"\\f(\[[^\]]*\]|\(..|.)|\\\(..|\\\[[^\]]*\]|\\[*n]\(?..|\\.")


def roff_to_text(source):
    """The running text of a man page: requests and comments dropped, escapes removed."""
    lines = []
    for line in source.splitlines():
        if line.startswith((".", "'")):
            # Keep the words of headings and font macros (.SH NAME, .B word).
            head, _, rest = line.partition(" ")
            if head in (".SH", ".SS", ".B", ".I", ".BR", ".IR", ".BI", ".IB", ".RB", ".RI"):
                lines.append(rest.replace('"', ""))
            continue
        lines.append(line)
    text = "\n".join(lines).replace("\\-", "-").replace("\\(em", "-")
    return ROFF_ESCAPES.sub("", text)


def man_pages(count, rng):
    """Up to `count` page texts, from a seeded shuffle of the installed manual pages."""
    files = sorted(Path("/usr/share/man").glob("man[1-8]/*.gz"))
    rng.shuffle(files)
    pages = []
    for path in files:
        try:
            source = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
        except (OSError, EOFError):
            continue
        if source.startswith(".so "):
            continue  # a link to another page
        text = roff_to_text(source)[:MAX_PAGE_CHARS]
        if len(text) >= MIN_PAGE_CHARS:
            pages.append(text)
        if len(pages) == count:
            break
    return pages


def passage(text, length, rng):
    """A run of whole words of `text`, about `length` characters long."""
    words = text.split()
    take, total = [], 0
    start = rng.randrange(max(1, len(words)))
    for word in words[start:] + words[:start]:
        take.append(word)
        total += len(word) + 1
        if total >= length:
            break
    return " ".join(take)


def insert_at_word(host, piece, rng):
    spaces = [i for i, ch in enumerate(host) if ch == " "] or [len(host)]
    at = rng.choice(spaces)
    return host[:at] + " " + piece + " " + host[at:]


def plant(pages, count, rng):
    """Queries planted into hosts; changes the hosts in `pages` in place."""
    queries = []
    for qid in range(count):
        source, host = rng.sample(range(len(pages)), 2)
        ratio, fraction = rng.choice(RATIOS), rng.choice(FRACTIONS)
        text = passage(pages[source], max(60, len(pages[host]) // ratio), rng)
        words = text.split()
        inserted = " ".join(words[: max(1, round(len(words) * fraction))])
        pages[host] = insert_at_word(pages[host], inserted, rng)
        queries.append({"id": qid, "text": text, "source": source, "host": host,
                        "ratio": ratio, "fraction": fraction})
    return queries


def exact_truth(page_sets, query_sets, min_truth):
    """Every (query, page, containment ≥ min_truth), through an inverted index of the query
    shingles only, so the pages' shingles are intersected once."""
    wanted = set().union(*query_sets) if query_sets else set()
    postings = defaultdict(list)
    for pid, shingles in enumerate(page_sets):
        for h in shingles & wanted:
            postings[h].append(pid)
    truth = []
    for qid, shingles in enumerate(query_sets):
        counts = Counter(pid for h in shingles for pid in postings[h])
        for pid, shared in sorted(counts.items()):
            containment = shared / len(shingles)
            if containment >= min_truth:
                truth.append({"query": qid, "page": pid, "containment": round(containment, 6)})
    return truth


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--min-truth", type=float, default=0.4)
    parser.add_argument("--out", type=Path, default=Path("/tmp/containment-corpus"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    pages = man_pages(args.pages, rng)
    if len(pages) < 2:
        sys.exit("fewer than two manual pages found under /usr/share/man")
    queries = plant(pages, args.queries, rng)
    page_sets = [shingle_set(text) for text in pages]
    query_sets = [shingle_set(q["text"]) for q in queries]
    truth = exact_truth(page_sets, query_sets, args.min_truth)
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "corpus.jsonl", ({"id": i, "text": t, "size": len(s)}
                                            for i, (t, s) in enumerate(zip(pages, page_sets))))
    write_jsonl(args.out / "queries.jsonl", ({**q, "size": len(s)}
                                             for q, s in zip(queries, query_sets)))
    write_jsonl(args.out / "truth.jsonl", truth)
    print(f"{len(pages)} pages, {len(queries)} queries, {len(truth)} truth pairs "
          f"(containment >= {args.min_truth}) in {args.out}")


if __name__ == "__main__":
    main()
