"""What the stubs type each call's result as, per index kind: checked by mypy
(``check_readme_types.py``), never run. An ``assert_type`` that no longer holds, or an
``Index.create`` argument that stops being refused, fails the check."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal, Optional, Union

import numpy as np
import numpy.typing as npt
from typing_extensions import assert_type

import mhdb
from mhdb import _mhdb

Key = Union[str, bytes]
Match = Union[tuple[Key, float], tuple[Key, int, float]]


def minhash_index(path: str) -> None:
    with mhdb.Index.create(path, 0.7, num_perm=128, bits=8) as idx:
        assert_type(idx, mhdb.Index[Literal["minhash"]])
        assert_type(idx.query("text"), list[tuple[Key, float]])
        assert_type(idx.query(signature=[1, 2], top=3), list[tuple[Key, float]])
        assert_type(idx.query_many(texts=["a"]), mhdb.QueryIterator[tuple[Key, float]])
        assert_type(idx.query("text", containment=0.8), list[tuple[Key, float, float]])
        assert_type(idx.query_many(texts=["a"], containment=0.8),
                    mhdb.QueryIterator[tuple[Key, float, float]])
        assert_type(idx.dedup(), Iterator[tuple[Key, Key, float]])
        assert_type(idx.dedup(0.9, "pairs"), Iterator[tuple[Key, Key, float]])
        assert_type(idx.dedup(format="clusters"), Iterator[list[Key]])
        assert_type(idx.dedup(0.9, "clusters"), Iterator[list[Key]])
        assert_type(idx.dedup(format="drop"), Iterator[Key])
        for a, b, jaccard in idx.dedup():
            assert_type(jaccard, float)
        assert_type(idx.insert_if_novel("k", "text"), list[tuple[Key, float]])
        assert_type(idx.insert_many([("k", "text")]), int)
        skipped = idx.insert_many([("k", "text")], novel_only=True, threshold=0.9)
        assert_type(skipped, list[tuple[Key, list[Match]]])
        for key, matches in skipped:
            assert_type(matches, list[Match])
    assert_type(mhdb.Index.open_or_create(path), mhdb.Index[Literal["minhash"]])


def simhash_index(path: str) -> None:
    with mhdb.Index.create(path, kind="simhash", max_hamming=4, shingle="word:1") as idx:
        assert_type(idx, mhdb.Index[Literal["simhash"]])
        assert_type(idx.query("text"), list[tuple[Key, int, float]])
        assert_type(idx.query_many(texts=["a"]), mhdb.QueryIterator[tuple[Key, int, float]])
        assert_type(idx.insert_if_novel("k", "text"), list[tuple[Key, int, float]])
        for a, b, distance, cosine in idx.dedup():
            assert_type(distance, int)
        assert_type(idx.dedup(format="drop"), Iterator[Key])
    opened: mhdb.Index[Literal["simhash"]] = mhdb.Index.open(path)
    assert_type(opened.dedup(), Iterator[tuple[Key, Key, int, float]])
    # MinHash parameters are refused for a SimHash index, statically as at run time.
    mhdb.Index.create(path, kind="simhash", num_perm=64)  # type: ignore[call-overload]
    mhdb.Index.create(path, max_hamming=3)  # type: ignore[call-overload]


def either_kind(idx: mhdb.Index[Literal["minhash", "simhash"]], unknown: mhdb.Index) -> None:
    assert_type(idx.query("text"), list[Match])
    assert_type(unknown, mhdb.Index[Any])
    # A handle of either kind is accepted where any index is.
    either_kind(mhdb.Index.create("p"), mhdb.Index.create("q", kind="simhash"))


def shards(paths: list[str]) -> None:
    with mhdb.Index.open_many(paths, key_file="idx.key") as many:
        assert_type(many, mhdb.Shards[Any])
        assert_type(many.query("text", top=3), list[tuple[Key, float]])
        assert_type(many.query_many(texts=["a"]), mhdb.QueryIterator[tuple[Key, float]])
        assert_type(many.dedup(), Iterator[tuple[Key, Key, float]])
        assert_type(many.dedup(format="drop"), Iterator[Key])
        assert_type(many.get("k"), Optional[npt.NDArray[np.uint64]])
        assert_type(len(many), int)
        assert_type(many.stats(), dict[str, Any])
    simhash: mhdb.Shards[Literal["simhash"]] = mhdb.Index.open_many(paths)
    assert_type(simhash.query("text"), list[tuple[Key, int, float]])


def bbit(sigs: npt.NDArray[np.uint64]) -> None:
    packed = _mhdb.bbit_pack(sigs, 4)
    assert_type(packed, npt.NDArray[np.uint8])
    assert_type(_mhdb.bbit_estimate(packed, packed, 128, 4), npt.NDArray[np.float64])
    assert_type(_mhdb.bbit_packed_len(128, 4), int)
