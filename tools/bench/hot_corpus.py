#!/usr/bin/env python3
"""A boilerplate-heavy multilingual corpus built from real text on this machine.

The text is the software translations installed under /usr/share/locale (gettext catalogs:
real sentences in 25 languages and six scripts: Latin, Cyrillic, Greek, CJK, Hangul,
Georgian) and the license texts of /usr/share/common-licenses. Pages are assembled the way a
generated documentation site assembles them:

* ~80 % are reference pages of one generated family (languages Zipf-weighted): the site chrome of the page's language
  (a fixed run of that language's messages: navigation, notices, footer), a shared license
  section (two sections of the machine's license texts), and a short page-specific body (messages drawn for that page, a generated command
  name and options). These pages share most of their text, so at a low threshold one of them
  has thousands of candidates and hundreds to thousands of matches.
* ~20 % are free pages: long runs of messages of one language, a tenth of them edited copies
  of another free page (the near-duplicates a dedup should find).

Everything is deterministic for a seed (files are read in sorted order; one seeded PRNG), so
on a given machine the corpus is the same from run to run.

    python3 -m tools.bench.hot_corpus --pages 20000 --out /tmp/hot/corpus.jsonl
"""

import argparse
import gettext
import glob
import json
import os
import random
import sys

LANGUAGES = [
    "de", "fr", "es", "it", "pt_BR", "sv", "da", "nl", "fi", "pl", "cs", "hu", "ro", "tr",
    "vi", "id", "ru", "uk", "sr", "el", "ka", "ja", "zh_CN", "zh_TW", "ko",
]
LOCALE_DIR = "/usr/share/locale"
LICENSES = "/usr/share/common-licenses"


def catalog_messages(lang):
    """Every translated message of `lang` longer than 20 characters, deduplicated, in a fixed
    order (catalog file name, then message id)."""
    seen = set()
    out = []
    for path in sorted(glob.glob(os.path.join(LOCALE_DIR, lang, "LC_MESSAGES", "*.mo"))):
        try:
            with open(path, "rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog
        except Exception:  # a catalog Python cannot parse: skip it
            continue
        for key in sorted(catalog, key=repr):
            text = catalog[key]
            if not isinstance(text, str) or len(text) <= 20 or text in seen:
                continue
            seen.add(text)
            out.append(" ".join(text.split()))
    return out


def license_sections():
    """The license texts, cut into sections of about 1.5 KB."""
    sections = []
    for path in sorted(glob.glob(os.path.join(LICENSES, "*"))):
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            words = f.read().split()
        for i in range(0, len(words), 250):
            sections.append(" ".join(words[i:i + 250]))
    return sections


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--family-share", type=float, default=0.8,
                    help="share of pages from the generated reference family")
    ap.add_argument("--out", required=True)
    ap.add_argument("--queries", type=int, default=200,
                    help="also write this many family pages as hot queries to OUT.queries.jsonl")
    ap.add_argument("--body-messages", default="6",
                    help="messages in a family page's own body: N, or MIN-MAX drawn per page "
                         "(a spread of body lengths spreads the family's similarities)")
    ap.add_argument("--paragraph-docs", type=int, default=0,
                    help="instead: this many documents, each 1-3 paragraphs drawn from a pool "
                         "of --paragraphs (the heavily duplicated dedup case)")
    ap.add_argument("--paragraphs", type=int, default=5300)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    body_lo, _, body_hi = a.body_messages.partition("-")
    body_lo = int(body_lo)
    body_hi = int(body_hi or body_lo)
    if a.paragraph_docs:
        return paragraph_corpus(a, rng)
    pools = {}
    for lang in LANGUAGES:
        msgs = catalog_messages(lang)
        if len(msgs) >= 2000:
            pools[lang] = msgs
    if len(pools) < 5:
        sys.exit(f"only {len(pools)} languages with gettext catalogs under {LOCALE_DIR}")
    langs = sorted(pools)
    licenses = license_sections()
    # The family's site chrome: per language, a fixed run of messages (the same on every page
    # of that language), and one license section shared by every page of the family.
    chrome = {lang: rng.sample(pools[lang], 45) for lang in langs}
    first = rng.randrange(len(licenses) - 1)
    shared_license = " ".join(licenses[first:first + 2])
    # Languages are not equally common on a site: Zipf weights, so the family of the first
    # languages is a few thousand pages and that of the last a few hundred.
    weights = [1 / (rank + 1) ** 0.8 for rank in range(len(langs))]
    free_pages = []
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    family_ids = []
    total = 0
    with open(a.out, "w", encoding="utf-8") as out:
        for i in range(a.pages):
            if rng.random() < a.family_share:
                lang = rng.choices(langs, weights)[0]
                c = chrome[lang]
                cmd = f"{rng.choice(pools[lang]).split()[0]}-{i}"
                # (A fixed length draws nothing: the default corpus stays the same.)
                size = body_lo if body_lo == body_hi else rng.randint(body_lo, body_hi)
                body = rng.sample(pools[lang], size)
                options = " ".join(f"--opt-{rng.randrange(10**6)}" for _ in range(4))
                text = "\n".join([
                    " ".join(c[:15]),
                    f"{cmd} {options}",
                    " ".join(body),
                    " ".join(c[15:30]),
                    shared_license,
                    " ".join(c[30:]),
                ])
                key = f"ref/{lang}/{i}"
                family_ids.append(len(family_ids))
                family_ids[-1] = (key, text)
            else:
                lang = langs[rng.randrange(len(langs))]
                if free_pages and rng.random() < 0.1:
                    # An edited copy of an earlier free page: a few messages replaced.
                    base_lang, base = free_pages[rng.randrange(len(free_pages))]
                    lang = base_lang
                    msgs = list(base)
                    for _ in range(max(1, len(msgs) // 12)):
                        msgs[rng.randrange(len(msgs))] = rng.choice(pools[lang])
                else:
                    msgs = rng.sample(pools[lang], 60)
                    free_pages.append((lang, msgs))
                text = " ".join(msgs)
                key = f"page/{lang}/{i}"
            total += len(text.encode())
            out.write(json.dumps({"id": key, "text": text}, ensure_ascii=False) + "\n")
    if a.queries:
        picks = random.Random(a.seed + 1).sample(family_ids, min(a.queries, len(family_ids)))
        with open(a.out + ".queries.jsonl", "w", encoding="utf-8") as q:
            for key, text in picks:
                q.write(json.dumps({"id": key, "text": text}, ensure_ascii=False) + "\n")
    print(f"{a.pages} pages, {total / 1e6:.1f} MB of text, {len(langs)} languages, "
          f"{len(family_ids)} family pages -> {a.out}", file=sys.stderr)


def paragraph_corpus(a, rng):
    """Documents assembled from a small pool of paragraphs (five messages of one language
    each): few distinct paragraphs, so band buckets are large and pairs many."""
    pools = {lang: catalog_messages(lang) for lang in LANGUAGES}
    langs = sorted(lang for lang, msgs in pools.items() if len(msgs) >= 2000)
    paragraphs = []
    for i in range(a.paragraphs):
        lang = langs[i % len(langs)]
        paragraphs.append(" ".join(rng.sample(pools[lang], 5)))
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    total = 0
    with open(a.out, "w", encoding="utf-8") as out:
        for i in range(a.paragraph_docs):
            text = "\n".join(rng.choice(paragraphs) for _ in range(rng.randint(1, 3)))
            total += len(text.encode())
            out.write(json.dumps({"id": f"doc/{i}", "text": text}, ensure_ascii=False) + "\n")
    print(f"{a.paragraph_docs} documents from {a.paragraphs} paragraphs, {total / 1e6:.1f} MB "
          f"-> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
