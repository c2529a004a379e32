"""The engine's b-bit packing and estimate as exported to Python (``bbit_pack``,
``bbit_estimate``, ``bbit_packed_len``: what ``mhdb.spark`` stores and verifies with), against
what an index stores and answers: packing a full signature gives the bytes of the signature
the index stored, and the estimate between packed signatures is the Jaccard an index reports
for the same two documents, at every width."""

from __future__ import annotations

import pathlib

import numpy as np
import numpy.typing as npt
import pytest

import mhdb
from mhdb import _mhdb

WIDTHS = (1, 2, 4, 8, 16, 32, 64)
WORDS = [f"w{i}" for i in range(400)]


def text(i: int) -> str:
    """Documents in families of near-duplicates: ``i`` and ``i + 1`` share most words."""
    family, member = divmod(i, 4)
    words = [WORDS[(family * 37 + j * 11) % len(WORDS)] for j in range(60)]
    for m in range(member):
        words[(m * 13) % len(words)] = f"edit{family}-{m}"
    return " ".join(words)


def packed_reference(slots: npt.NDArray[np.uint64], bits: int) -> bytes:
    """The layout of ``format/hashing.md`` §7, bit by bit: slot ``i`` takes bits ``i*bits ..``
    of a little-endian bit string (bit ``p`` in byte ``p // 8`` at position ``p % 8``)."""
    out = bytearray((len(slots) * bits + 7) // 8)
    for i, slot in enumerate(slots.tolist()):
        for j in range(bits):
            if slot >> j & 1:
                p = i * bits + j
                out[p // 8] |= 1 << (p % 8)
    return bytes(out)


@pytest.mark.parametrize("bits", WIDTHS)
def test_packing_and_estimate_equal_the_index(tmp_path: pathlib.Path, bits: int) -> None:
    docs = {f"d{i}": text(i) for i in range(24)}
    with mhdb.Index.create(tmp_path / "idx", 0.5, num_perm=96, bits=bits) as idx:
        idx.insert_many(docs.items())
        keys = list(docs)
        sigs = idx.hasher.sketch_many([docs[k] for k in keys])
        stored = np.stack([s for s in map(idx.get, keys) if s is not None])
        assert stored.shape == sigs.shape

        packed = _mhdb.bbit_pack(sigs, bits)
        width = _mhdb.bbit_packed_len(96, bits)
        assert width == 96 * bits // 8
        assert packed.dtype == np.uint8 and packed.shape == (len(keys), width)
        # The full signature packs to what the index stored (its low bits), laid out as the
        # format specifies; one signature alone packs to its row.
        assert np.array_equal(_mhdb.bbit_pack(stored, bits), packed)
        for one, sig in zip(packed[::5], sigs[::5]):
            assert one.tobytes() == packed_reference(sig, bits)
        assert np.array_equal(_mhdb.bbit_pack(sigs[3], bits), packed[3])

        # Every pair dedup verified has the estimate bbit_estimate gives, to the bit.
        row: dict[str | bytes, int] = {k: i for i, k in enumerate(keys)}
        pairs = list(idx.dedup(0.3))
        assert len(pairs) >= 12
        a = packed[[row[p[0]] for p in pairs]]
        b = packed[[row[p[1]] for p in pairs]]
        got = _mhdb.bbit_estimate(a, b, 96, bits)
        assert got.dtype == np.float64
        assert got.tolist() == [p[2] for p in pairs]
        # And a query's estimate (exact=False: no stored sets) for every document.
        first = _mhdb.bbit_estimate(np.repeat(packed[:1], len(keys), axis=0), packed, 96, bits)
        for key, j in idx.query(signature=sigs[0], threshold=0.3, exact=False):
            assert j == first[row[key]], key


def test_sub_byte_estimates_count_only_real_slots() -> None:
    """Below 8 bits several slots share a byte: the estimate must come from the equal slots
    of the unpacked signatures, for any k (padding bits included)."""
    rng = np.random.default_rng(5)
    for bits in (1, 2, 4):
        for k in (1, 7, 64, 129, 512):
            a = rng.integers(0, 1 << 63, size=(50, k), dtype=np.uint64)
            b = a.copy()
            flip = rng.random((50, k)) < rng.random((50, 1))  # 0-100 % of slots per row
            b[flip] = rng.integers(0, 1 << 63, size=int(flip.sum()), dtype=np.uint64)
            low = np.uint64((1 << bits) - 1)
            equal = ((a & low) == (b & low)).sum(axis=1)
            chance = 2.0**-bits
            want = np.clip((equal / k - chance) / (1 - chance), 0.0, 1.0)
            pa, pb = _mhdb.bbit_pack(a, bits), _mhdb.bbit_pack(b, bits)
            assert pa.shape == (50, -(-k * bits // 8))
            # The same float operations as the engine's: equal to the bit.
            assert _mhdb.bbit_estimate(pa, pb, k, bits).tolist() == want.tolist()


def test_non_contiguous_input_packs_like_a_copy() -> None:
    sigs = np.arange(64 * 6, dtype=np.uint64).reshape(64, 6) * np.uint64(0x9E3779B97F4A7C15)
    view = sigs.T  # (6, 64), column-major
    assert np.array_equal(_mhdb.bbit_pack(view, 4), _mhdb.bbit_pack(view.copy(), 4))
    packed = _mhdb.bbit_pack(sigs, 8)
    assert np.array_equal(
        _mhdb.bbit_estimate(packed[::2], packed[1::2], 6, 8),
        _mhdb.bbit_estimate(packed[::2].copy(), packed[1::2].copy(), 6, 8),
    )


def test_bad_arguments_are_refused() -> None:
    sigs = np.zeros((2, 8), dtype=np.uint64)
    with pytest.raises(mhdb.InvalidParameterError, match="bits"):
        _mhdb.bbit_pack(sigs, 3)
    with pytest.raises(mhdb.InvalidParameterError, match="bits"):
        _mhdb.bbit_packed_len(8, 0)
    with pytest.raises(mhdb.InvalidParameterError, match="3-D"):
        _mhdb.bbit_pack(np.zeros((2, 2, 2), dtype=np.uint64), 8)
    packed = _mhdb.bbit_pack(sigs, 8)
    with pytest.raises(mhdb.InvalidParameterError, match=r"\(n, 8\)"):
        _mhdb.bbit_estimate(packed, packed[:1], 8, 8)
    with pytest.raises(mhdb.InvalidParameterError, match=r"\(n, 4\)"):
        _mhdb.bbit_estimate(packed, packed, 8, 4)
    with pytest.raises(TypeError):
        _mhdb.bbit_pack(sigs.astype(np.int64), 8)
    assert _mhdb.bbit_estimate(packed[:0], packed[:0], 8, 8).shape == (0,)
