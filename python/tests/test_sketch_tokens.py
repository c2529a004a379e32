"""MinHasher.sketch_tokens and sketch_hashes (format/hashing.md §15) and their batch forms:
equal to the golden vectors of tests/golden/tokens.json, which the independent reference
implementation (tools/conformance/reference_sketch.py tokens) computed."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import numpy as np
import pytest

import mhdb
from conftest import REPO, import_or_skip

VECTORS = json.loads((REPO / "tests" / "golden" / "tokens.json").read_text())
CASES = VECTORS["cases"]


def hexes(signature: Any) -> list[str]:
    return [f"{int(v):016x}" for v in signature]


def keyed_hasher(tmp_path: pathlib.Path, scheme: str, seed: int, k: int) -> mhdb.MinHasher:
    """The hasher of an index keyed with hashing.md §12.4's published test key (the index's
    own: `Index.hasher` signs with the key)."""
    key_file = tmp_path / "test.key"
    key_file.write_bytes(bytes.fromhex(VECTORS["test_key"]))
    path = tmp_path / f"idx-{scheme}-{seed}-{k}"
    with mhdb.Index.create(path, num_perm=k, scheme=scheme, seed=seed, key_file=key_file) as idx:
        return idx.hasher


def test_the_vectors_are_of_this_spec() -> None:
    assert VECTORS["spec_version"] == mhdb.SPEC_VERSION
    assert len(CASES) == 90


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{i}-{c['scheme']}-w{c['width']}" for i, c in enumerate(CASES)]
)
def test_golden_case(case: dict[str, Any], tmp_path: pathlib.Path) -> None:
    def hasher(k: int) -> mhdb.MinHasher:
        if case["keyed"]:
            return keyed_hasher(tmp_path, case["scheme"], case["seed"], k)
        return mhdb.MinHasher(num_perm=k, scheme=case["scheme"], seed=case["seed"])

    tokens, width = case["tokens"], case["width"]
    h16 = hasher(16)
    s16 = h16.sketch_tokens(tokens, width)
    assert s16.dtype == np.uint64 and hexes(s16) == case["slots16"]
    xxhash = import_or_skip("xxhash")
    s128 = hasher(128).sketch_tokens(tokens, width=width)
    assert f"{xxhash.xxh3_64_intdigest(s128.astype('<u8').tobytes()):016x}" == case["digest128"]
    many = h16.sketch_tokens_many([tokens, [], tokens], width)
    assert many.shape == (3, 16)
    assert hexes(many[0]) == hexes(many[2]) == case["slots16"]
    assert (many[1] == np.uint64(2**64 - 1)).all()  # no tokens: the empty-set signature


def test_order_and_repeats_do_not_matter_at_width_1() -> None:
    hasher = mhdb.MinHasher(num_perm=64)
    a = hasher.sketch_tokens(["the", "quick", "brown", "fox"])
    b = hasher.sketch_tokens(["fox", "the", "brown", "quick", "the", "fox"])
    np.testing.assert_array_equal(a, b)
    # n-grams do depend on the order.
    assert not np.array_equal(
        hasher.sketch_tokens(["the", "quick", "brown", "fox"], width=2),
        hasher.sketch_tokens(["fox", "brown", "quick", "the"], width=2),
    )
    # A string token is hashed as a word:1 shingle of the same word is.
    words = mhdb.MinHasher(num_perm=64, shingle="word:1")
    np.testing.assert_array_equal(a, words.sketch("the quick brown fox"))


def test_a_string_and_an_integer_are_different_tokens() -> None:
    hasher = mhdb.MinHasher(num_perm=64)
    assert mhdb.MinHasher.jaccard(hasher.sketch_tokens(["1"]), hasher.sketch_tokens([1])) == 0.0
    # An int64 numpy array is a list of integer tokens.
    np.testing.assert_array_equal(
        hasher.sketch_tokens([1, 2, 3]), hasher.sketch_tokens(np.array([3, 2, 1], dtype=np.int64))
    )


def test_precomputed_hashes_equal_the_reference() -> None:
    given = VECTORS["given_hashes"]
    hashes = np.array([int(h, 16) for h in given["hashes"]], dtype=np.uint64)
    for scheme in ("oph", "kperm"):
        hasher = mhdb.MinHasher(num_perm=16, scheme=scheme, seed=7)
        want = given[f"{scheme}_seed7_slots16"]
        assert hexes(hasher.sketch_hashes(hashes)) == want
        assert hexes(hasher.sketch_hashes([int(h) for h in hashes])) == want
        many = hasher.sketch_hashes_many([hashes, hashes[:0], hashes[::-1]])
        assert hexes(many[0]) == hexes(many[2]) == want
        assert (many[1] == np.uint64(2**64 - 1)).all()


def test_token_hashes_of_a_set_give_its_token_signature() -> None:
    """sketch_hashes of the element hashes that sketch_tokens computes gives its signature."""
    case = next(c for c in CASES if c["scheme"] == "oph" and not c["keyed"] and c["hashes"])
    hasher = mhdb.MinHasher(num_perm=16, scheme="oph", seed=case["seed"])
    hashes = np.array([int(h, 16) for h in case["hashes"]], dtype=np.uint64)
    assert hexes(hasher.sketch_hashes(hashes)) == case["slots16"]


def test_signatures_of_tokens_go_into_an_index(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path, num_perm=128) as idx:
        hasher = idx.hasher
        kmers = [[f"{s[i:i + 4]}" for i in range(len(s) - 3)] for s in ("ACGTTGCAACGT", "TTTTGGGG")]
        for n, row in enumerate(hasher.sketch_tokens_many(kmers)):
            idx.insert(f"seq{n}", signature=row)
        assert idx.query(signature=hasher.sketch_tokens(kmers[0]))[0] == ("seq0", 1.0)


@pytest.mark.parametrize(
    ("tokens", "error", "message"),
    [
        (["a", 1.5], TypeError, r"tokens\[1\]: a token is a str or an int, not float"),
        ([True], TypeError, r"tokens\[0\]: a token is a str or an int, not bool"),
        ([2**63], ValueError, r"tokens\[0\]: 9223372036854775808 does not fit"),
        ("abc", TypeError, "not a single str"),
    ],
)
def test_bad_tokens_are_refused(tokens: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        mhdb.MinHasher().sketch_tokens(tokens)


def test_bad_widths_and_hashes_are_refused() -> None:
    hasher = mhdb.MinHasher()
    with pytest.raises(mhdb.InvalidParameterError, match="width"):
        hasher.sketch_tokens(["a"], width=0)
    with pytest.raises(TypeError, match=r"hash_sets\[1\]: expected a 1-D numpy uint64"):
        hasher.sketch_hashes_many([[1], np.array([-1], dtype=np.int64)])
    with pytest.raises(TypeError, match=r"token_lists\[0\]\[0\]"):
        hasher.sketch_tokens_many([[None]])
