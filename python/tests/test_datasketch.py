"""mhdb.datasketch.MinHashLSH: a persistent front for datasketch's MinHashLSH.

With datasketch installed, the front over the same MinHash objects and the same (bands,
rows) returns exactly datasketch's candidates that verify at the threshold. Without it, the
scheme checks still run on stand-in objects with datasketch's attributes.
"""

from __future__ import annotations

import pathlib
import random
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
