"""Signatures from Python equal the golden vectors of hash spec v1 (tests/golden/vectors.json),
which an independent implementation of format/hashing.md computed: the binding is
bit-identical to the Rust crate."""

from __future__ import annotations

import json

import numpy as np
import pytest

import mhdb
from conftest import REPO, import_or_skip

VECTORS = json.loads((REPO / "tests" / "golden" / "vectors.json").read_text())
CASES = VECTORS["cases"]


def test_spec_version_matches() -> None:
    assert VECTORS["spec_version"] == mhdb.SPEC_VERSION
    assert len(CASES) == 50


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['scheme']}-{c['shingle']}" for i, c in enumerate(CASES)])
def test_golden_case(case: dict) -> None:
    def hasher(k: int) -> mhdb.MinHasher:
        return mhdb.MinHasher(
            num_perm=k,
            scheme=case["scheme"],
            seed=case["seed"],
            shingle=case["shingle"],
            nfkc=case["nfkc"],
        )

    s16 = hasher(16).sketch(case["text"])
    assert s16.dtype == np.uint64 and s16.shape == (16,)
    assert [f"{int(v):016x}" for v in s16] == case["slots16"]

    # k = 128 is pinned by an xxh3 digest of the slots' little-endian bytes.
    xxhash = import_or_skip("xxhash")
    s128 = hasher(128).sketch(case["text"])
    digest = xxhash.xxh3_64_intdigest(s128.astype("<u8").tobytes())
    assert f"{digest:016x}" == case["digest128"]

    # sketch_many gives the same rows as sketch, in order.
    many = hasher(16).sketch_many([case["text"], "", case["text"]])
    assert many.shape == (3, 16) and many.dtype == np.uint64
    assert (many[0] == s16).all() and (many[2] == s16).all()
    assert (many[1] == np.uint64(2**64 - 1)).all()  # the empty-set signature


def test_exact_hashes_equal_the_golden_vectors() -> None:
    """``MinHasher.exact_hashes`` is the unkeyed exact hash of ``format/hashing.md`` §17, as
    an independent implementation computed it (tests/golden/exact_hash.json)."""
    golden = json.loads((REPO / "tests" / "golden" / "exact_hash.json").read_text())
    assert golden["texts"]
    for case in golden["texts"]:
        hasher = mhdb.MinHasher(scheme=case["scheme"], seed=case["seed"], nfkc=case["nfkc"])
        lo, hi = (int(v) for v in hasher.exact_hashes([case["text"]])[0])
        assert f"{hi << 64 | lo:032x}" == case["unkeyed"], case["text"]
    hasher = mhdb.MinHasher()
    h = hasher.exact_hashes(["Some  TEXT", "some text", "some text!"])
    assert h.shape == (3, 2) and h.dtype == np.uint64
    assert (h[0] == h[1]).all() and not (h[0] == h[2]).all()
    with pytest.raises(mhdb.InvalidParameterError, match="unkeyed text hashers"):
        mhdb.MinHasher(shingle="tokens").exact_hashes(["a"])
