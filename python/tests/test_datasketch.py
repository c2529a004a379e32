"""mhdb.datasketch.MinHashLSH: a persistent front for datasketch's MinHashLSH.

With datasketch installed, the front over the same MinHash objects and the same (bands,
rows) returns exactly datasketch's candidates that verify at the threshold. Without it, the
scheme checks still run on stand-in objects with datasketch's attributes.
"""

from __future__ import annotations

import pathlib
import random
import zlib
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import mhdb
from mhdb.datasketch import MinHashLSH


def stand_in(values: list[int], scheme: str = "affine32", seed: int = 1) -> Any:
    """An object with a datasketch MinHash's attributes."""
    dtype = np.uint32 if scheme == "affine32" else np.uint64
    return SimpleNamespace(hashvalues=np.array(values, dtype=dtype), seed=seed, scheme=scheme)


def test_refuses_text_mhdb_signatures_and_other_schemes(tmp_path: pathlib.Path) -> None:
    rng = random.Random(1)
    base = [rng.randrange(2**32) for _ in range(128)]
    lsh = MinHashLSH(tmp_path / "lsh", threshold=0.5, num_perm=128)
    assert lsh.query(stand_in(base)) == [] and "a" not in lsh and lsh.is_empty()
    lsh.insert("a", stand_in(base))
    lsh.insert(7, stand_in(base[:100] + [v ^ 1 for v in base[100:]]))
    assert set(lsh.query(stand_in(base))) == {"a", 7} and 7 in lsh and len(lsh) == 2
    with pytest.raises(ValueError, match="already exists"):
        lsh.insert("a", stand_in(base))
    with pytest.raises(mhdb.SchemeMismatchError, match="affine64"):
        lsh.insert("b", stand_in(base, scheme="affine64"))
    with pytest.raises(mhdb.SchemeMismatchError, match="seed"):
        lsh.query(stand_in(base, seed=2))
    with pytest.raises(mhdb.SchemeMismatchError, match="MinHasher"):
        lsh.insert("c", mhdb.MinHasher().sketch("an mhdb signature"))
    with pytest.raises(ValueError, match="length"):
        lsh.query(stand_in(base[:64]))
    # The index records the scheme: text and mhdb's signer are refused there too.
    idx = lsh.index
    assert idx is not None and idx.params["scheme"] == "datasketch-affine32"
    with pytest.raises(mhdb.SchemeMismatchError, match="datasketch"):
        idx.query("some text")
    with pytest.raises(mhdb.SchemeMismatchError):
        idx.insert("t", "some text")
    with pytest.raises(mhdb.SchemeMismatchError):
        idx.hasher
    lsh.remove(7)
    with pytest.raises(ValueError, match="does not exist"):
        lsh.remove(7)
    lsh.close()
    # It persists, and keeps its scheme and bands.
    with MinHashLSH(tmp_path / "lsh", threshold=0.9, num_perm=128) as again:
        assert (
            list(again.keys()) == ["a"]
            and again.threshold == 0.5
            and (again.b, again.r) == (lsh.b, lsh.r)
        )
    with pytest.raises(mhdb.ParameterMismatchError):
        MinHashLSH(tmp_path / "lsh", num_perm=64)
    # An index of mhdb's own signatures is not a datasketch index.
    mhdb.Index.create(tmp_path / "own").close()
    with pytest.raises(mhdb.SchemeMismatchError):
        MinHashLSH(tmp_path / "own")
    with pytest.raises(mhdb.InvalidParameterError):
        MinHashLSH(tmp_path / "x", storage_config={"type": "redis"})


def test_insertion_session(tmp_path: pathlib.Path) -> None:
    rng = random.Random(2)
    sigs = {
        f"k{i}": stand_in([rng.randrange(2**32) for _ in range(64)], "legacy", 42)
        for i in range(25)
    }
    lsh = MinHashLSH(tmp_path / "lsh", threshold=0.9, num_perm=64, params=(8, 8))
    with lsh.insertion_session(buffer_size=10) as session:
        for k, m in sigs.items():
            session.insert(k, m)
        with pytest.raises(ValueError):
            session.insert("k3", sigs["k3"])
    assert len(lsh) == 25 and lsh.index is not None
    assert lsh.index.params["scheme"] == "datasketch-legacy" and lsh.index.params["seed"] == 42
    assert all(lsh.query(m) == [k] for k, m in sigs.items())


def shingles(text: str) -> set[bytes]:
    return {text[i : i + 4].encode() for i in range(len(text) - 3)}


@pytest.mark.parametrize("scheme", ["affine32", "legacy", "affine64"])
def test_same_candidates_as_datasketch_verified(tmp_path: pathlib.Path, scheme: str) -> None:
    datasketch = pytest.importorskip("datasketch")
    rng = random.Random(3)
    words = [f"w{i}" for i in range(400)]
    base = [" ".join(rng.choice(words) for _ in range(60)) for _ in range(40)]
    docs = {}
    for i in range(300):
        text = base[i % 40].split()
        for _ in range(rng.randrange(0, 20)):
            text[rng.randrange(len(text))] = rng.choice(words)
        docs[f"d{i}"] = " ".join(text)
    kw: dict[str, Any] = {} if scheme == "affine32" else {"scheme": scheme}
    mhs = {}
    for k, t in docs.items():
        m = datasketch.MinHash(num_perm=128, seed=5, **kw)
        m.update_batch(list(shingles(t)))
        mhs[k] = datasketch.LeanMinHash(m) if k.endswith("7") else m
    threshold = 0.6
    theirs = datasketch.MinHashLSH(threshold=threshold, num_perm=128)
    ours = MinHashLSH(
        tmp_path / scheme, threshold=threshold, num_perm=128, params=(theirs.b, theirs.r)
    )
    with ours.insertion_session(buffer_size=64) as session:
        for k, m in mhs.items():
            theirs.insert(k, m)
            session.insert(k, m)
    compared = 0
    for k, m in mhs.items():
        expected = {c for c in theirs.query(m) if mhs[c].jaccard(m) >= threshold}
        got = ours.query_with_scores(m)
        assert {c for c, _ in got} == expected, k
        assert all(j == pytest.approx(mhs[c].jaccard(m)) for c, j in got)
        compared += len(expected)
    assert compared > len(mhs)  # near-duplicates were found, not only each document itself


def datasketch_pair(
    tmp_path: pathlib.Path, name: str, scheme: str, n: int = 120
) -> tuple[Any, MinHashLSH, dict[str, Any]]:
    """datasketch's MinHashLSH and this front over the same MinHash objects of near-duplicate
    texts."""
    datasketch = pytest.importorskip("datasketch")
    # A seed from the name's bytes: str hashes differ between processes (PYTHONHASHSEED), and
    # the corpus must be the same in every run.
    rng = random.Random(zlib.crc32(name.encode()))
    words = [f"w{i}" for i in range(300)]
    base = [" ".join(rng.choice(words) for _ in range(50)) for _ in range(15)]
    kw: dict[str, Any] = {} if scheme == "affine32" else {"scheme": scheme}
    mhs = {}
    for i in range(n):
        text = base[i % 15].split()
        for _ in range(rng.randrange(0, 8)):
            text[rng.randrange(len(text))] = rng.choice(words)
        m = datasketch.MinHash(num_perm=64, seed=9, **kw)
        m.update_batch(list(shingles(" ".join(text))))
        mhs[f"{name}{i}"] = m
    theirs = datasketch.MinHashLSH(threshold=0.7, num_perm=64)
    ours = MinHashLSH(tmp_path / name, threshold=0.7, num_perm=64, params=(theirs.b, theirs.r))
    with ours.insertion_session() as session:
        for k, m in mhs.items():
            theirs.insert(k, m)
            session.insert(k, m)
    return theirs, ours, mhs


@pytest.mark.parametrize("scheme", ["affine32", "legacy", "affine64"])
def test_bucket_counts_are_datasketchs(tmp_path: pathlib.Path, scheme: str) -> None:
    theirs, ours, mhs = datasketch_pair(tmp_path, "c", scheme)
    assert ours.get_counts() == theirs.get_counts()
    subset = ["c3", "c4", "c18", "c3"]
    assert ours.get_subset_counts(*subset) == theirs.get_subset_counts(*subset)
    # A bucket holds each near-duplicate family's members: some counts are above one.
    assert max(max(band.values()) for band in ours.get_counts()) > 1


def test_merge_adds_the_others_keys_and_refuses_what_datasketch_refuses(
    tmp_path: pathlib.Path,
) -> None:
    _, left, left_mhs = datasketch_pair(tmp_path, "l", "affine32", n=40)
    _, right, right_mhs = datasketch_pair(tmp_path, "r", "affine32", n=30)
    left.merge(right)
    assert len(left) == 70
    assert sorted(left.keys()) == sorted([*left_mhs, *right_mhs])
    for k, m in right_mhs.items():
        assert k in left.query(m)
    # A key in both: refused with check_overlap (nothing merged), else the other's MinHash.
    with pytest.raises(ValueError, match="overlapping"):
        left.merge(right, check_overlap=True)
    assert len(left) == 70
    other = MinHashLSH(tmp_path / "p", threshold=0.7, num_perm=64, params=(4, 16))
    with pytest.raises(ValueError, match="different initialization parameters"):
        left.merge(other)
    legacy = MinHashLSH(
        tmp_path / "s", threshold=0.7, num_perm=64, params=(left.b, left.r), scheme="legacy", seed=9
    )
    legacy.insert("x", stand_in(list(range(64)), "legacy", 9))
    with pytest.raises(ValueError, match="scheme"):
        left.merge(legacy)
    # Merging into an index not created yet takes the other's scheme and seed.
    fresh = MinHashLSH(tmp_path / "f", threshold=0.7, num_perm=64, params=(left.b, left.r))
    fresh.merge(right)
    assert fresh.index is not None and fresh.index.params["seed"] == 9
    assert sorted(fresh.keys()) == sorted(right_mhs)


def test_query_buffer_intersects_verified_answers(tmp_path: pathlib.Path) -> None:
    _, ours, mhs = datasketch_pair(tmp_path, "q", "affine32")
    a, b = mhs["q0"], mhs["q15"]  # two members of one family
    ours.add_to_query_buffer(a)
    ours.add_to_query_buffer(b)
    both = set(ours.query(a)) & set(ours.query(b))
    assert sorted(ours.collect_query_buffer()) == sorted(both) and both
    assert ours.collect_query_buffer() == []  # the buffer was emptied
    ours.add_to_query_buffer(a)
    assert sorted(ours.collect_query_buffer()) == sorted(ours.query(a))


def test_deletion_session_removes_as_datasketch(tmp_path: pathlib.Path) -> None:
    _, ours, mhs = datasketch_pair(tmp_path, "d", "affine32", n=20)
    with ours.deletion_session() as session:
        for k in ["d1", "d2", "d3"]:
            session.remove(k)
        with pytest.raises(ValueError):
            session.remove("d1")
    assert len(ours) == 17 and "d2" not in ours
    assert all("d2" not in ours.query(m) for m in mhs.values())
