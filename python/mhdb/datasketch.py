"""A persistent, drop-in front for ``datasketch.MinHashLSH``.

Switch an existing datasketch workflow by changing one import and adding a path::

    from datasketch import MinHash
    from mhdb.datasketch import MinHashLSH          # was: from datasketch import MinHashLSH

    lsh = MinHashLSH("lsh-index", threshold=0.8, num_perm=128)   # was: MinHashLSH(threshold=…)
    lsh.insert("doc-1", m1)
    lsh.query(m2)                                     # and the index is still there tomorrow

The index stores the signatures of datasketch ``MinHash`` / ``LeanMinHash`` objects as they
are (their ``hashvalues``), and records which datasketch scheme made them (``legacy`` for
datasketch 1.x, ``affine32`` or ``affine64`` for 2.x; stored as scheme codes 16, 17 and 18,
see ``format/hashing.md``) and with which seed. A MinHash of another scheme, seed or length
is refused with :class:`mhdb.SchemeMismatchError`, and so are text queries and mhdb's own
signatures: signatures of different schemes are never mixed.

Differences from datasketch, on purpose:

- ``query`` returns the candidates whose estimated Jaccard (the fraction of equal hash
  values, exactly ``MinHash.jaccard``) is at least the threshold, best first: datasketch's
  candidates, verified. Bands are the same: band ``i`` covers hash values
  ``[i*r, (i+1)*r)``.
- Keys are ``str``, ``bytes`` or ``int`` (an ``int`` is stored as the bytes
  ``b"\\xff\\x00int:" + decimal``, which are never valid UTF-8). Keys are never pickled.
- ``storage_config`` may only be ``{"type": "dict"}`` or omitted (the storage is the mhdb
  index at ``path``); a custom ``hashfunc`` for band keys is not supported.
- The datasketch scheme and seed are taken from the first MinHash inserted (the index is
  created then); ``scheme=`` and ``seed=`` create it at once.
- ``merge`` adds the other index's documents as ``mhdb merge`` does: a key in both ends up
  with the other's MinHash (datasketch would file it under both), unless ``check_overlap``.
- ``get_counts`` and ``get_subset_counts`` give datasketch's bucket keys and counts, computed
  from the stored hash values (one pass over the keys named, or over every key).
- ``collect_query_buffer`` returns the keys every buffered MinHash finds at the threshold
  (verified, as ``query``), where datasketch intersects unverified candidates.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Iterator
from typing import Any, Optional, Union

import numpy as np

from . import _errors
from ._mhdb import Index

__all__ = [
    "MinHashLSH",
    "MinHashLSHEnsemble",
    "MinHashLSHDeletionSession",
    "MinHashLSHInsertionSession",
    "SCHEMES",
]

SCHEMES = {
    "legacy": "datasketch-legacy",
    "affine32": "datasketch-affine32",
    "affine64": "datasketch-affine64",
}
"""datasketch's scheme names → mhdb's stored scheme names."""

_INT_KEY = b"\xff\x00int:"

Key = Union[str, bytes, int]


def _encode_key(key: Hashable) -> Union[str, bytes]:
    if isinstance(key, (str, bytes)):
        return key
    if isinstance(key, int) and not isinstance(key, bool):
        return _INT_KEY + str(key).encode()
    raise TypeError(f"mhdb.datasketch keys are str, bytes or int, not {type(key).__name__}")


def _decode_key(key: Union[str, bytes]) -> Key:
    if isinstance(key, bytes) and key.startswith(_INT_KEY):
        return int(key[len(_INT_KEY) :])
    return key


_SCHEME_OF = {stored: name for name, stored in SCHEMES.items()}
"""mhdb's stored scheme names → datasketch's scheme names."""


def _band_keys(values: np.ndarray, b: int, r: int) -> list[bytes]:
    """datasketch's bucket key of each band: the band's hash values, byte-swapped, as bytes."""
    return [bytes(values[i * r : (i + 1) * r].byteswap().data) for i in range(b)]


def _describe(minhash: Any) -> tuple[str, int, np.ndarray]:
    """(datasketch scheme, seed, hash values as uint64) of a MinHash or LeanMinHash."""
    if isinstance(minhash, np.ndarray) or not hasattr(minhash, "hashvalues"):
        raise _errors.SchemeMismatchError(
            "expected a datasketch MinHash or LeanMinHash, not "
            f"{type(minhash).__name__}: bare hash values carry no trace of the scheme that "
            "made them (an mhdb.MinHasher signature is not a datasketch signature)"
        )
    # datasketch before 2.0 had one scheme and no attribute for it.
    scheme = getattr(minhash, "scheme", None) or "legacy"
    if scheme not in SCHEMES:
        raise _errors.SchemeMismatchError(f"unknown datasketch MinHash scheme {scheme!r}")
    values = np.asarray(minhash.hashvalues)
    return scheme, int(minhash.seed), values.astype(np.uint64, copy=False)


def _optimal_param(
    threshold: float, num_perm: int, fp_weight: float, fn_weight: float
) -> tuple[int, int]:
    """datasketch's choice of (bands, rows): the least weighted false-positive plus
    false-negative mass. Uses scipy's ``quad`` as datasketch does when scipy is installed
    (datasketch depends on it), else a fine Simpson rule."""
    try:
        from scipy.integrate import quad

        def integrate(f: Any, a: float, b: float) -> float:
            return float(quad(f, a, b)[0])

    except ImportError:  # pragma: no cover - datasketch users have scipy

        def integrate(f: Any, a: float, b: float) -> float:
            xs = np.linspace(a, b, 2049)
            ys = f(xs)
            h = (b - a) / 2048
            return float(h / 3 * (ys[0] + ys[-1] + 4 * ys[1:-1:2].sum() + 2 * ys[2:-1:2].sum()))

    best, opt = float("inf"), (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = integrate(lambda s: 1 - (1 - s ** float(r)) ** float(b), 0.0, threshold)
            fn = integrate(lambda s: 1 - (1 - (1 - s ** float(r)) ** float(b)), threshold, 1.0)
            error = fp * fp_weight + fn * fn_weight
            if error < best:
                best, opt = error, (b, r)
    return opt


def _create_index(path: str, threshold: float, num_perm: int, scheme: str, seed: int,
                  **params: Any) -> Index:
    """A new index at ``path`` for datasketch MinHashes of ``scheme`` and ``seed``, their hash
    values stored as they are, every bucket kept whole (as datasketch keeps them)."""
    if scheme not in SCHEMES:
        raise _errors.InvalidParameterError(
            f"scheme must be one of {sorted(SCHEMES)}, not {scheme!r}"
        )
    return Index.create(path, threshold if threshold > 0 else 1e-9, num_perm=num_perm,
                        scheme=SCHEMES[scheme], seed=seed, bits=64, bucket_cap=None, **params)


def _values_for(front: Union[MinHashLSH, MinHashLSHEnsemble], minhash: Any,
                create: bool) -> Optional[np.ndarray]:
    """The hash values of ``minhash`` for ``front``'s index, which is created for its scheme
    when ``create`` and there is none yet (``None`` without an index). A MinHash of another
    length, scheme or seed is refused."""
    scheme, seed, values = _describe(minhash)
    if len(values) != front.h:
        raise ValueError("Expecting minhash with length %d, got %d" % (front.h, len(values)))
    if front._index is None:
        if not create:
            return None
        front._create(scheme, seed)
    assert front._index is not None
    stored = front._index.params
    if stored["scheme"] != SCHEMES[scheme] or stored["seed"] != seed:
        raise _errors.SchemeMismatchError(
            f"MinHash scheme {scheme!r} with seed {seed} does not match the index's "
            f"{stored['scheme']} signatures with seed {stored['seed']}"
        )
    return values


class MinHashLSH:
    """``datasketch.MinHashLSH`` on a persistent, crash-safe mhdb index at ``path``.

    Args:
        path: the index directory (opened if it holds an index, else created on the first
            insert, or at once when ``scheme`` is given).
        threshold: the Jaccard threshold of ``query``.
        num_perm: the number of hash values of the MinHash objects.
        weights: (false-positive weight, false-negative weight) for choosing bands × rows,
            as in datasketch.
        params: (bands, rows), bypassing the choice, as in datasketch.
        scheme: ``"legacy"``, ``"affine32"`` or ``"affine64"``: create the index now for
            MinHash objects of this scheme (default: the first inserted one's).
        seed: the MinHash seed (with ``scheme``; datasketch's default is 1).
        read_only: open an existing index read-only (queries only; no lock).

    An existing index keeps its stored threshold, bands and rows; ``num_perm`` must match.
    Every write is durable when it returns; ``insertion_session`` batches them.
    """

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]"],
        threshold: float = 0.8,
        num_perm: int = 128,
        weights: tuple[float, float] = (0.5, 0.5),
        params: Optional[tuple[int, int]] = None,
        storage_config: Optional[dict[str, Any]] = None,
        prepickle: Optional[bool] = None,
        hashfunc: Any = None,
        *,
        scheme: Optional[str] = None,
        seed: int = 1,
        read_only: bool = False,
    ) -> None:
        if storage_config and storage_config.get("type", "dict") != "dict":
            raise _errors.InvalidParameterError(
                "storage_config: the storage of mhdb.datasketch.MinHashLSH is the mhdb index "
                f"at path; {storage_config.get('type')!r} storage is not supported"
            )
        if hashfunc is not None or prepickle:
            raise _errors.InvalidParameterError(
                "hashfunc and prepickle are not supported: band keys are computed by mhdb and "
                "keys are never pickled"
            )
        if not 0.0 <= threshold <= 1.0:
            raise ValueError("threshold must be in [0.0, 1.0]")
        if num_perm < 2:
            raise ValueError("Too few permutation functions")
        if any(w < 0.0 or w > 1.0 for w in weights):
            raise ValueError("Weight must be in [0.0, 1.0]")
        if sum(weights) != 1.0:
            raise ValueError("Weights must sum to 1.0")
        self.h = num_perm
        self._path = os.fspath(path)
        self._index: Optional[Index] = None
        self._read_only = read_only
        self._query_buffer: list[Optional[np.ndarray]] = []
        if os.path.exists(os.path.join(self._path, "CURRENT")):
            self._index = Index.open(self._path, read_only=read_only)
            stored = self._index.params
            if not stored["scheme"].startswith("datasketch-"):
                self._index.close()
                raise _errors.SchemeMismatchError(
                    f"{self._path} holds an index of mhdb {stored['scheme']} signatures, not of "
                    "datasketch MinHash objects"
                )
            if stored["num_perm"] != num_perm:
                self._index.close()
                err = _errors.ParameterMismatchError(
                    f"{self._path} stores {stored['num_perm']} hash values per MinHash, not {num_perm}"
                )
                err.parameter, err.stored, err.requested = (
                    "num_perm",
                    str(stored["num_perm"]),
                    str(num_perm),
                )
                raise err
            self.threshold = stored["threshold"]
            self.b, self.r = stored["bands"], stored["rows"]
        else:
            if read_only:
                raise _errors.NotFoundError(
                    f"{self._path} is not an mhdb database (no CURRENT file)"
                )
            if params is not None:
                self.b, self.r = params
                if self.b * self.r > num_perm:
                    raise ValueError(
                        f"The product of b and r in params is {self.b} * {self.r} = {self.b * self.r} "
                        f"-- it must be less than num_perm {num_perm}. Did you forget to specify num_perm?"
                    )
            else:
                self.b, self.r = _optimal_param(threshold, num_perm, *weights)
            if self.b < 2:
                raise ValueError("The number of bands are too small (b < 2)")
            self.threshold = threshold
            if scheme is not None:
                self._create(scheme, seed)

    # -- the index --------------------------------------------------------------------

    def _create(self, scheme: str, seed: int) -> Index:
        self._index = _create_index(self._path, self.threshold, self.h, scheme, seed,
                                    bands=self.b, rows=self.r)
        return self._index

    @property
    def index(self) -> Optional[Index]:
        """The underlying :class:`mhdb.Index` (``None`` until the first insert)."""
        return self._index

    def _signature(self, minhash: Any, create: bool) -> Optional[np.ndarray]:
        return _values_for(self, minhash, create)

    # -- datasketch's API -------------------------------------------------------------

    def insert(self, key: Key, minhash: Any, check_duplication: bool = True) -> None:
        """Inserts ``key`` with the hash values of ``minhash``; durable when it returns.

        Raises ``ValueError`` if ``check_duplication`` and the key exists (as datasketch).
        """
        values = self._signature(minhash, create=True)
        assert self._index is not None
        k = _encode_key(key)
        if check_duplication and k in self._index:
            raise ValueError("The given key already exists")
        self._index.insert(k, signature=values)

    def query(self, minhash: Any) -> list[Key]:
        """Keys whose MinHash has Jaccard ≥ the threshold with ``minhash``, best first."""
        values = self._signature(minhash, create=False)
        if values is None or self._index is None:
            return []
        return [_decode_key(k) for k, _ in self._index.query(signature=values)]

    def query_with_scores(self, minhash: Any) -> list[tuple[Key, float]]:
        """As :meth:`query`, with each key's estimated Jaccard."""
        values = self._signature(minhash, create=False)
        if values is None or self._index is None:
            return []
        return [(_decode_key(k), j) for k, j in self._index.query(signature=values)]

    def remove(self, key: Key) -> None:
        """Removes ``key``; ``ValueError`` if it does not exist (as datasketch)."""
        if self._index is None or not self._index.delete(_encode_key(key)):
            raise ValueError("The given key does not exist")

    def __contains__(self, key: object) -> bool:
        if self._index is None:
            return False
        try:
            return _encode_key(key) in self._index
        except TypeError:
            return False

    def __len__(self) -> int:
        return 0 if self._index is None else len(self._index)

    def keys(self) -> Iterator[Key]:
        """Every key, in no particular order."""
        return iter([] if self._index is None else [_decode_key(k) for k in self._index.keys()])

    def is_empty(self) -> bool:
        """True when the index holds no key."""
        return len(self) == 0

    def merge(self, other: MinHashLSH, check_overlap: bool = False) -> None:
        """Adds every key of ``other`` (an index of the same ``num_perm``, bands and rows)
        with its MinHash, as one durable commit.

        Raises ``ValueError`` if the parameters or MinHash schemes differ, or if
        ``check_overlap`` and a key is in both (as datasketch; nothing is merged then).
        """
        if not isinstance(other, MinHashLSH):
            raise ValueError(f"Cannot merge type MinHashLSH and type {type(other).__name__}.")
        if (self.h, self.b, self.r) != (other.h, other.b, other.r):
            raise ValueError("Cannot merge MinHashLSH with different initialization parameters.")
        source = other._index
        if source is None or len(source) == 0:
            return
        params = source.params
        scheme = _SCHEME_OF.get(params["scheme"])
        if scheme is None:  # not reachable: an index of this front holds datasketch signatures
            raise _errors.SchemeMismatchError(f"{other._path} holds {params['scheme']} signatures")
        if self._index is None:
            self._create(scheme, params["seed"])
        assert self._index is not None
        mine = self._index.params
        if (mine["scheme"], mine["seed"]) != (params["scheme"], params["seed"]):
            raise ValueError(
                f"Cannot merge MinHashLSH indexed with MinHash scheme {scheme!r} (seed "
                f"{params['seed']}) into one indexed with {mine['scheme']} (seed {mine['seed']})"
            )
        keys = source.keys()
        if check_overlap and any(k in self._index for k in keys):
            raise ValueError("The keys are overlapping, duplicate key exists.")
        pairs = [(k, v) for k in keys if (v := source.get(k)) is not None]
        self._index.insert_many(
            [k for k, _ in pairs], [v for _, v in pairs], commit_every=max(1, len(pairs))
        )

    def get_counts(self) -> list[dict[bytes, int]]:
        """For each band, datasketch's bucket key → the number of keys in that bucket."""
        return self._counts(None if self._index is None else self._index.keys())

    def get_subset_counts(self, *keys: Key) -> list[dict[bytes, int]]:
        """As :meth:`get_counts`, over ``keys`` only (a key not in the index counts nowhere,
        as in datasketch)."""
        return self._counts([_encode_key(k) for k in set(keys)])

    def _counts(self, keys: Optional[list[Union[str, bytes]]]) -> list[dict[bytes, int]]:
        counts: list[dict[bytes, int]] = [{} for _ in range(self.b)]
        if self._index is None or not keys:
            return counts
        narrow = self._index.params["scheme"] == SCHEMES["affine32"]
        for key in keys:
            values = self._index.get(key)
            if values is None:
                continue
            if narrow:  # datasketch keeps these as 32-bit values, and hashes their bytes
                values = values.astype(np.uint32)
            for band, bucket in zip(counts, _band_keys(values, self.b, self.r)):
                band[bucket] = band.get(bucket, 0) + 1
        return counts

    def add_to_query_buffer(self, minhash: Any) -> None:
        """Queues ``minhash`` for :meth:`collect_query_buffer`."""
        values = self._signature(minhash, create=False)
        self._query_buffer.append(values)

    def collect_query_buffer(self) -> list[Key]:
        """The keys that every MinHash queued by :meth:`add_to_query_buffer` finds (each at
        the threshold, as :meth:`query`), and empties the queue."""
        queued, self._query_buffer = self._query_buffer, []
        if not queued or self._index is None or any(v is None for v in queued):
            return []
        found = [{k for k, _ in self._index.query(signature=v)} for v in queued]
        return [_decode_key(k) for k in set.intersection(*found)]

    def deletion_session(self, buffer_size: int = 50000) -> MinHashLSHDeletionSession:
        """A context manager that removes keys (as :meth:`remove`; each removal is durable
        when it returns, so ``buffer_size`` is accepted and not needed)."""
        return MinHashLSHDeletionSession(self, buffer_size)

    def insertion_session(self, buffer_size: int = 50000) -> MinHashLSHInsertionSession:
        """A context manager that inserts in batches of ``buffer_size`` (one durable commit
        each; a crash loses at most the batch not yet committed)."""
        return MinHashLSHInsertionSession(self, buffer_size)

    def close(self) -> None:
        """Closes the index (its lock is released)."""
        if self._index is not None:
            self._index.close()

    def __enter__(self) -> MinHashLSH:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()


class MinHashLSHInsertionSession:
    """Buffers inserts and writes them ``buffer_size`` at a time (see
    :meth:`MinHashLSH.insertion_session`)."""

    def __init__(self, lsh: MinHashLSH, buffer_size: int) -> None:
        self.lsh = lsh
        self.buffer_size = max(1, buffer_size)
        self._keys: list[Union[str, bytes]] = []
        self._values: list[np.ndarray] = []
        self._pending: set[Union[str, bytes]] = set()

    def insert(self, key: Key, minhash: Any, check_duplication: bool = True) -> None:
        """Queues ``key``; it is written with its batch."""
        values = self.lsh._signature(minhash, create=True)
        assert values is not None and self.lsh._index is not None
        k = _encode_key(key)
        if check_duplication and (k in self._pending or k in self.lsh._index):
            raise ValueError("The given key already exists")
        self._keys.append(k)
        self._values.append(values)
        self._pending.add(k)
        if len(self._keys) >= self.buffer_size:
            self.flush()

    def flush(self) -> None:
        """Writes the queued inserts as one durable commit."""
        if self._keys and self.lsh._index is not None:
            self.lsh._index.insert_many(self._keys, self._values, commit_every=len(self._keys))
        self._keys, self._values, self._pending = [], [], set()

    def close(self) -> None:
        """Writes what is queued."""
        self.flush()

    def __enter__(self) -> MinHashLSHInsertionSession:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()


class MinHashLSHDeletionSession:
    """Removes keys (see :meth:`MinHashLSH.deletion_session`)."""

    def __init__(self, lsh: MinHashLSH, buffer_size: int) -> None:
        self.lsh = lsh
        self.buffer_size = max(1, buffer_size)

    def remove(self, key: Key) -> None:
        """Removes ``key``; ``ValueError`` if it does not exist (as datasketch)."""
        self.lsh.remove(key)

    def close(self) -> None:
        """Nothing is queued: every removal was written when it was made."""

    def __enter__(self) -> MinHashLSHDeletionSession:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()


class MinHashLSHEnsemble:
    """``datasketch.MinHashLSHEnsemble`` on a persistent, crash-safe mhdb containment index at
    ``path`` (``Index.create(..., metric="containment")``, ``format/containment.md``).

    ``index(entries)`` takes ``(key, minhash, size)`` triples and ``query(minhash, size)``
    yields the keys of the indexed sets that contain at least ``threshold`` of the query set,
    as datasketch's does. Differences, on purpose:

    - Persistent and incremental: ``index`` may be called again and ``insert`` adds one set;
      the partitions are fixed size classes (half octaves of the set size), so a set added
      later is found as if it had been indexed with the others. ``num_part`` and ``m`` are
      accepted and not used.
    - ``query`` answers are verified: a candidate is kept when its containment, estimated
      from the two MinHashes and the two sizes, reaches the threshold (datasketch returns its
      unverified candidates). A set holding exactly the threshold's share is then as likely
      missed as found; ``recall=0.95`` keeps about 95 % of those, and more false matches
      (``Index.query``'s ``recall``).
    - The threshold is stored with the index: an existing index keeps its own.
    - Keys as :class:`MinHashLSH` stores them; the datasketch scheme and seed are taken from
      the first MinHash indexed (or ``scheme=``, ``seed=``). ``num_perm`` must be at least 96
      (the longest banding is 12 bands of 8 rows).
    """

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]"],
        threshold: float = 0.9,
        num_perm: int = 128,
        num_part: int = 16,
        m: int = 8,
        weights: tuple[float, float] = (0.5, 0.5),
        storage_config: Optional[dict[str, Any]] = None,
        prepickle: Optional[bool] = None,
        *,
        scheme: Optional[str] = None,
        seed: int = 1,
        read_only: bool = False,
        recall: Optional[float] = None,
    ) -> None:
        if storage_config and storage_config.get("type", "dict") != "dict":
            raise _errors.InvalidParameterError(
                "storage_config: the storage of mhdb.datasketch.MinHashLSHEnsemble is the mhdb "
                f"index at path; {storage_config.get('type')!r} storage is not supported"
            )
        if prepickle:
            raise _errors.InvalidParameterError("prepickle is not supported: keys are never pickled")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError("threshold must be in [0.0, 1.0]")
        if num_perm < 2:
            raise ValueError("Too few permutation functions")
        if num_part < 1:
            raise ValueError("num_part must be at least 1")
        if m < 2 or m > num_perm:
            raise ValueError("m must be in the range of [2, num_perm]")
        if any(w < 0.0 or w > 1.0 for w in weights) or sum(weights) != 1.0:
            raise ValueError("Weights must be in [0.0, 1.0] and sum to 1.0")
        self.h = num_perm
        self.threshold = threshold
        self._recall = recall
        self._path = os.fspath(path)
        self._index: Optional[Index] = None
        if os.path.exists(os.path.join(self._path, "CURRENT")):
            self._index = Index.open(self._path, read_only=read_only)
            stored = self._index.params
            if stored.get("metric") != "containment" or not stored["scheme"].startswith("datasketch-"):
                self._index.close()
                raise _errors.SchemeMismatchError(
                    f"{self._path} is not a containment index of datasketch MinHash objects"
                )
            if stored["num_perm"] != num_perm:
                self._index.close()
                raise ValueError(
                    f"{self._path} stores {stored['num_perm']} hash values per MinHash, not {num_perm}"
                )
            self.threshold = stored["threshold"]
        elif read_only:
            raise _errors.NotFoundError(f"{self._path} is not an mhdb database (no CURRENT file)")
        elif scheme is not None:
            self._create(scheme, seed)

    def _create(self, scheme: str, seed: int) -> Index:
        self._index = _create_index(self._path, self.threshold, self.h, scheme, seed,
                                    metric="containment")
        return self._index

    def _signature(self, minhash: Any, create: bool) -> Optional[np.ndarray]:
        return _values_for(self, minhash, create)

    @property
    def index_handle(self) -> Optional[Index]:
        """The underlying :class:`mhdb.Index` (``None`` until the first set is indexed)."""
        return self._index

    def index(self, entries: Iterable[tuple[Key, Any, int]]) -> None:
        """Indexes ``(key, minhash, size)`` triples, ``size`` the number of distinct elements
        of the set; each is durable when the next is read. May be called again."""
        for key, minhash, size in entries:
            self.insert(key, minhash, size)

    def insert(self, key: Key, minhash: Any, size: int) -> None:
        """Indexes one set (``size`` distinct elements); replaces an existing ``key``."""
        if size <= 0:
            raise ValueError("Set size must be positive")
        values = self._signature(minhash, create=True)
        assert self._index is not None
        self._index.insert(_encode_key(key), signature=values, set_size=size)

    def query(self, minhash: Any, size: int) -> Iterator[Key]:
        """The keys of the indexed sets containing at least the threshold of the query set
        (``size`` distinct elements), best first."""
        if size <= 0:
            raise ValueError("Set size must be positive")
        values = self._signature(minhash, create=False)
        if values is None or self._index is None:
            return iter(())
        # (datasketch takes a threshold of 0, a containment the index refuses: any share.)
        found = self._index.query(signature=values, set_size=size,
                                  containment=max(self.threshold, 1e-9), recall=self._recall)
        return (_decode_key(key) for key, _, _ in found)

    def __contains__(self, key: object) -> bool:
        if self._index is None or not isinstance(key, (str, bytes, int)):
            return False
        return _encode_key(key) in self._index

    def __len__(self) -> int:
        return 0 if self._index is None else len(self._index)

    def is_empty(self) -> bool:
        """Whether no set is indexed."""
        return len(self) == 0

    def close(self) -> None:
        """Closes the index (every indexed set is already durable)."""
        if self._index is not None:
            self._index.close()

    def __enter__(self) -> MinHashLSHEnsemble:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()
