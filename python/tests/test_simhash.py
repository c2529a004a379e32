"""A SimHash index from Python: create, insert, query with distances, dedup, wrong kinds."""

from __future__ import annotations

import math
import pathlib

import pytest

import mhdb

A = "The quick brown fox jumps over the lazy dog by the river, while the farmer watches the sky."
# The same words in another order: under word:1 shingles, the same tf vector (cosine 1).
A_REORDERED = " ".join(reversed(A.split()))
C = "Completely unrelated text about databases, write-ahead logs and crash recovery procedures."


def test_simhash_index_answers_with_distance_and_cosine(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path, kind="simhash", max_hamming=3, shingle="word:1") as idx:
        p = idx.params
        assert p["kind"] == "simhash" and p["max_hamming"] == 3 and p["weighting"] == "tf"
        idx.insert("a", A)
        idx.insert("reordered", A_REORDERED)
        idx.insert("c", C)
        hits = idx.query(A)
        assert {key for key, *_ in hits} == {"a", "reordered"}
        for key, distance, cosine in hits:
            assert distance == 0 and cosine == 1.0, key
        assert idx.query(C) == [("c", 0, 1.0)]
        pairs = list(idx.dedup())
        assert pairs == [("a", "reordered", 0, 1.0)]
        # A cosine threshold of 1 keeps distance 0 only.
        assert all(d == 0 for _, d, _ in idx.query(A, threshold=1.0))
        stats = idx.stats()
        assert len(stats["bands"]) == 4 and stats["params"] == p
    with mhdb.Index.open(tmp_index_path, read_only=True) as idx:
        assert [k for k, *_ in idx.query(A_REORDERED)] == ["a", "reordered"]
        assert idx.verify()["ok"]


def test_cosine_is_cos_pi_d_over_64(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path, kind="simhash", max_hamming=15) as idx:
        idx.insert("a", A)
        for key, distance, cosine in idx.query(A + " and one more clause at the end"):
            assert key == "a" and 0 < distance <= 15
            assert cosine == pytest.approx(math.cos(math.pi * distance / 64))


def test_the_wrong_kind_and_minhash_parameters_are_refused(tmp_path: pathlib.Path) -> None:
    with pytest.raises(mhdb.InvalidParameterError, match="MinHash parameter"):
        mhdb.Index.create(tmp_path / "a", kind="simhash", num_perm=64)
    with pytest.raises(mhdb.InvalidParameterError, match="max_hamming"):
        mhdb.Index.create(tmp_path / "b", max_hamming=3)
    with pytest.raises(mhdb.InvalidParameterError, match="max_hamming"):
        mhdb.Index.create(tmp_path / "c", kind="simhash", max_hamming=16)
    with pytest.raises(mhdb.InvalidParameterError, match="kind"):
        mhdb.Index.create(tmp_path / "d", kind="lsh")
    with mhdb.Index.create(tmp_path / "e", kind="simhash") as idx:
        with pytest.raises(mhdb.InvalidParameterError, match="64-bit fingerprint"):
            idx.query(signature=[12345] * 128)
        with pytest.raises(mhdb.ParameterMismatchError):
            idx.hasher
