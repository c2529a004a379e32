"""Exact re-rank from Python: an index created with ``store_sets=True`` answers a query by
text with the exact Jaccard similarity of the shingle sets (computed here independently),
``exact=False`` gives the signature's estimate, and a bare signature cannot be inserted (there
is no set to store)."""

from __future__ import annotations

import pathlib

import pytest

import mhdb

BASE = (
    "Near-duplicate detection finds documents that share most of their text: mirrored pages, "
    "syndicated news, templated listings and the boilerplate around them. An index that keeps "
    "each document's shingle set can report how similar two documents really are."
)


def shingles(text: str, n: int = 5) -> set[str]:
    t = " ".join(text.lower().split())
    return {t[i : i + n] for i in range(len(t) - n + 1)}


def jaccard(a: str, b: str) -> float:
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb)


def variants() -> dict[str, str]:
    words = BASE.split()
    out = {"base": BASE}
    # Every `every`-th word dropped, from three offsets: exact Jaccard 0.42-0.89 against
    # BASE, several of them close to the 0.6 threshold.
    for every in range(3, 14):
        for v in range(3):
            out[f"v{every}-{v}"] = " ".join(w for i, w in enumerate(words) if (i + v) % every)
    return out


def test_store_sets_reports_exact_jaccard(tmp_path: pathlib.Path) -> None:
    docs = variants()
    with mhdb.Index.create(tmp_path / "idx", threshold=0.6, store_sets=True) as idx:
        assert idx.stats()["params"]["store_sets"] is True
        idx.insert_many(docs.items())
        got = idx.query(text=BASE)
        assert got, "the base text matches itself at least"
        # Near the threshold (an estimate below it plus 3 standard deviations) the exact
        # Jaccard decides and is reported; above, the estimate.
        # (Three standard deviations of the b-bit estimate at 0.6: format/hashing.md §14.)
        params = idx.params
        k, c = params["num_perm"], 2.0 ** -params["bits"]
        p = c + (1 - c) * 0.6
        sure = 0.6 + 3 * (p * (1 - p) / k) ** 0.5 / (1 - c)
        estimated = dict(idx.query(text=BASE, exact=False))
        assert {k for k, _ in got} <= set(estimated) | {k for k, j in got}
        reranked = 0
        for key, j in got:
            assert jaccard(BASE, docs[key]) >= 0.6
            if estimated.get(key, 0.0) < sure:
                assert j == pytest.approx(jaccard(BASE, docs[key]), abs=1e-3)
                reranked += 1
            else:
                assert j == estimated[key]
        assert reranked > 0, "some match was re-ranked"
        with pytest.raises(ValueError):
            idx.insert("bare", signature=mhdb.MinHasher().sketch(BASE))
