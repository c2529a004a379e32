"""Type stubs of the compiled module ``mhdb._mhdb`` (re-exported by ``mhdb``).

:class:`Index` is generic in its kind, ``Index[Literal["minhash"]]`` or
``Index[Literal["simhash"]]``, because the kind decides the shape of every match: ``(key,
jaccard)`` in a MinHash index, ``(key, distance, cosine)`` in a SimHash one. ``create`` and
``open_or_create`` are typed by their ``kind`` argument (``open_or_create`` assumes an existing
index is of that kind, as its other parameters describe it); ``open`` cannot know the kind and
gives ``Index[Any]``, whose results are typed as a MinHash index's: annotate a SimHash index
opened by path, ``idx: Index[Literal["simhash"]] = Index.open(path)``. The subscripted form
is for annotations only (``from __future__ import annotations`` or a string): the runtime
class takes no subscript.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, Literal, NoReturn, Optional, Protocol, Union, final, overload

import numpy as np
import numpy.typing as npt
from typing_extensions import Self, TypeVar

__all__ = [
    "MinHasher",
    "index_params_for",
    "cap_ranks",
    "bbit_pack",
    "bbit_estimate",
    "bbit_packed_len",
    "Index",
    "QueryIterator",
    "Shards",
    "SPEC_VERSION",
    "MAX_KEY_LEN",
    "__version__",
]

SPEC_VERSION: int
"""The hash spec version (``format/hashing.md``) signatures are computed with."""
MAX_KEY_LEN: int
"""The longest key, in bytes."""
__version__: str

_Key = Union[str, bytes]
"""A key: ``str`` (stored as UTF-8) or ``bytes``. Returned as ``str`` when valid UTF-8."""
_SignatureLike = Union[npt.NDArray[np.uint64], npt.NDArray[np.uint32], Sequence[int]]
"""A signature: a 1-D ``uint64`` (or ``uint32``) array, or a sequence of ints."""
_PathLike = Union[str, "os.PathLike[str]"]
_Kind = Literal["minhash", "simhash"]
_MinHash = Literal["minhash"]
_SimHash = Literal["simhash"]
_KindT = TypeVar("_KindT", bound=_Kind, covariant=True, default=Any)
_MatchT = TypeVar("_MatchT")
_MinHashMatch = tuple[_Key, float]
"""A match in a MinHash index: ``(key, estimated or exact Jaccard)``."""
_SimHashMatch = tuple[_Key, int, float]
"""A match in a SimHash index: ``(key, Hamming distance, cosine)``."""
_ContainmentMatch = tuple[_Key, float, float]
"""A containment query's match: ``(key, containment, jaccard)``."""
_NearDuplicate = tuple[_Key, list[Union[_MinHashMatch, _SimHashMatch]]]
"""A document ``insert_many(novel_only=True)`` did not store: ``(key, matches)``."""
_MinHashPair = tuple[_Key, _Key, float]
"""A near-duplicate pair of a MinHash index: ``(older key, newer key, jaccard)``."""
_SimHashPair = tuple[_Key, _Key, int, float]
"""A near-duplicate pair of a SimHash index: ``(older key, newer key, distance, cosine)``."""

class _ArrowStream(Protocol):
    """An object exporting the Arrow C stream interface: a pyarrow ``Table`` or
    ``RecordBatchReader``, a Polars ``DataFrame``, a pandas ``DataFrame``, a DuckDB result."""

    def __arrow_c_stream__(self, requested_schema: Any = None, /) -> object: ...

def index_params_for(threshold: Optional[float] = None, **params: Any) -> dict[str, Any]:
    """The parameters ``Index.create(path, threshold, **params)`` would store (as
    ``Index.params`` returns them), without creating anything."""

def cap_ranks(keys: list[str]) -> npt.NDArray[np.uint64]:
    """What a bucket cap ranks each key by (xxh3-64 of its UTF-8 bytes; a bucket over the cap
    keeps the lowest), for ``mhdb.spark``."""

def bbit_packed_len(num_perm: int, bits: int) -> int:
    """Bytes that ``num_perm`` slots take packed at ``bits`` bits each (1, 2, 4, 8, 16, 32
    or 64)."""

def bbit_pack(signatures: npt.NDArray[np.uint64], bits: int) -> npt.NDArray[np.uint8]:
    """The lowest ``bits`` bits of every slot, packed as an index stores a signature: one
    signature (1-D) gives its packed bytes, an ``(n, k)`` matrix gives ``(n,
    bbit_packed_len(k, bits))`` ``uint8``. Runs without the GIL."""

def bbit_estimate(
    a: npt.NDArray[np.uint8], b: npt.NDArray[np.uint8], num_perm: int, bits: int
) -> npt.NDArray[np.float64]:
    """The index's Jaccard estimate of ``a[i]`` against ``b[i]`` for every row of two
    ``(n, bbit_packed_len(num_perm, bits))`` matrices of :func:`bbit_pack`'s output, shape
    ``(n,)``, in the engine's float operations. Runs without the GIL."""

@final
class MinHasher:
    """Computes MinHash signatures of texts exactly as ``format/hashing.md`` specifies.

    ``num_perm`` defaults to 128, datasketch's ``MinHash`` default; an index created with the
    defaults has 512 slots: sign for an index with its own hasher, ``Index.hasher``."""

    def __new__(
        cls,
        num_perm: int = 128,
        scheme: Literal["oph", "kperm"] = "oph",
        seed: int = 0,
        shingle: str = "char:5",
        nfkc: Optional[bool] = None,
        lowercase: Optional[bool] = None,
        collapse_whitespace: Optional[bool] = None,
    ) -> MinHasher:
        """``shingle`` is ``"char:N"``, ``"word:N"``, ``"unicode-word:N"`` (with its options)
        or ``"tokens"`` / ``"tokens:N"`` (token lists, for :meth:`sketch_tokens`). A
        normalization flag left ``None`` takes the scheme's default: NFKC off, lowercasing
        and white-space collapsing on for texts; none for token lists, where a flag set to
        ``True`` is refused (:class:`InvalidParameterError`)."""
    @property
    def num_perm(self) -> int:
        """Number of slots k of every signature."""
    @property
    def scheme(self) -> str:
        """The signature scheme: ``"oph"`` or ``"kperm"``."""
    @property
    def seed(self) -> int:
        """The user seed."""
    @property
    def shingle(self) -> str:
        """The shingling, as ``"char:N"``, ``"word:N"``, ``"unicode-word:N"`` with its options,
        or ``"tokens"`` / ``"tokens:N"``."""
    @property
    def nfkc(self) -> bool:
        """Whether NFKC normalization is applied."""
    @property
    def lowercase(self) -> bool:
        """Whether text is lowercased."""
    @property
    def collapse_whitespace(self) -> bool:
        """Whether white space runs are collapsed."""
    def sketch(self, text: str) -> npt.NDArray[np.uint64]:
        """The signature of ``text``: a ``uint64`` array of length ``num_perm``."""
    def sketch_many(self, texts: Iterable[str]) -> npt.NDArray[np.uint64]:
        """Signatures of many texts, shape ``(n, num_perm)``, on every core without the GIL."""
    def exact_hashes(self, texts: Iterable[str]) -> npt.NDArray[np.uint64]:
        """The exact hashes of many texts (XXH3-128 of the normalized text), shape ``(n, 2)``:
        low then high 64 bits. Unkeyed text hashers only."""
    def set_sizes(self, texts: Iterable[str]) -> npt.NDArray[np.uint32]:
        """The number of distinct shingle hashes of each text, as the SET_SIZE column stores
        it, shape ``(n,)``."""
    def band_keys(
        self, signatures: npt.NDArray[np.uint64], bands: int, rows: int
    ) -> npt.NDArray[np.uint64]:
        """The LSH band keys of ``(n, num_perm)`` signatures, shape ``(n, bands)``, as an
        index with these signature parameters and ``bands`` × ``rows`` computes them."""
    @staticmethod
    def jaccard(a: _SignatureLike, b: _SignatureLike) -> float:
        """The estimated Jaccard similarity of two signatures (fraction of equal slots)."""
    def sketch_tokens(
        self,
        tokens: Union[Iterable[Union[str, int]], npt.NDArray[np.int64]],
        width: Optional[int] = None,
    ) -> npt.NDArray[np.uint64]:
        """The signature of a token list (``format/hashing.md`` §15): ``str`` and ``int``
        (signed 64-bit) tokens, taken as given (no normalization). ``width=1``: the set of the
        tokens (order and repeats do not matter); ``width=N``: runs of N tokens. ``"1"`` and
        ``1`` are different tokens. The default width is N for a hasher made with
        ``shingle="tokens:N"`` (the signature a ``shingle="tokens:N"`` index stores; another
        width is refused), 1 otherwise."""
    def sketch_tokens_many(
        self,
        token_lists: Iterable[Union[Iterable[Union[str, int]], npt.NDArray[np.int64]]],
        width: Optional[int] = None,
    ) -> npt.NDArray[np.uint64]:
        """Signatures of many token lists, shape ``(n, num_perm)``, on every core without the
        GIL."""
    def sketch_hashes(
        self, hashes: Union[npt.NDArray[np.uint64], Sequence[int]]
    ) -> npt.NDArray[np.uint64]:
        """The signature of a set given by its 64-bit element hashes, which skip the hashing
        step: they must be uniformly random over 64 bits (a 64-bit hash's output); small ints
        such as ids belong in :meth:`sketch_tokens`. A keyed hasher's key does not apply."""
    def sketch_hashes_many(
        self, hash_sets: Iterable[Union[npt.NDArray[np.uint64], Sequence[int]]]
    ) -> npt.NDArray[np.uint64]:
        """Signatures of many element-hash sets, shape ``(n, num_perm)``, on every core
        without the GIL."""

@final
class QueryIterator(Iterator[list[_MatchT]], Generic[_MatchT]):
    """What :meth:`Index.query_many` returns: one list of matches per input, in order."""

    def __iter__(self) -> Self: ...
    def __next__(self) -> list[_MatchT]: ...

@final
class Index(Generic[_KindT]):
    """A persistent, crash-safe MinHash-LSH index in a directory.

    Keys are ``str`` or ``bytes``; keys come back as ``str`` when their bytes are valid
    UTF-8, else as ``bytes`` (``"a"`` and ``b"a"`` name the same document). Every method that
    does real work releases the GIL.
    """

    @overload
    @staticmethod
    def create(
        path: _PathLike,
        threshold: Optional[float] = None,
        *,
        num_perm: Optional[int] = None,
        scheme: str = "oph",
        seed: int = 0,
        shingle: str = "char:5",
        nfkc: Optional[bool] = None,
        lowercase: Optional[bool] = None,
        collapse_whitespace: Optional[bool] = None,
        bits: Optional[int] = None,
        band_slots: Optional[int] = None,
        bands: Optional[int] = None,
        rows: Optional[int] = None,
        bucket_cap: Optional[int] = 10000,
        store_sets: bool = False,
        key_file: Optional[_PathLike] = None,
        kind: _MinHash = "minhash",
        metric: Literal["jaccard", "containment"] = "jaccard",
    ) -> Index[_MinHash]:
        """Creates a new index in ``path`` (bands × rows tuned for ``threshold``, 0.8 if not given). Not given:
        ``num_perm`` is 512 (128 with ``scheme="kperm"``), ``band_slots`` 128 (or
        ``num_perm`` if fewer) and ``bits`` the width that makes a signature 256 bytes (4 to
        32; 4 at 512 slots), as ``mhdb create`` chooses them. With
        ``key_file``, a keyed index (shingles hashed under that secret key). With
        ``shingle="tokens"`` (or ``"tokens:N"``, runs of N tokens) an index of token lists
        (:meth:`insert_tokens`, :meth:`query_tokens`, ``insert_arrow(tokens=...)``). A
        normalization flag left ``None`` takes the scheme's default (NFKC off, lowercasing
        and white-space collapsing on for texts; none for token lists, which refuse
        ``True``). With ``metric="containment"``, an index that also finds the documents
        holding most of a query (``query(..., containment=C)``, LSH Ensemble over set-size
        classes; ``bands`` and ``rows`` are refused)."""
    @overload
    @staticmethod
    def create(
        path: _PathLike,
        *,
        kind: _SimHash,
        seed: int = 0,
        shingle: str = "char:5",
        nfkc: bool = False,
        lowercase: bool = True,
        collapse_whitespace: bool = True,
        bucket_cap: Optional[int] = 10000,
        key_file: Optional[_PathLike] = None,
        max_hamming: int = 3,
        weighting: Literal["tf", "logtf"] = "tf",
    ) -> Index[_SimHash]:
        """With ``kind="simhash"``: 64-bit SimHash fingerprints matched within
        ``max_hamming`` bits (``num_perm``, ``scheme``, ``bits``, ``band_slots``, ``bands``,
        ``rows``, ``store_sets`` and a threshold are refused); queries then return ``(key,
        distance, cosine)``."""
    @staticmethod
    def open(
        path: _PathLike, read_only: bool = False, key_file: Optional[_PathLike] = None
    ) -> Index:
        """Opens an existing index (read-only: no lock, nothing modified); ``key_file`` is a
        keyed index's secret key (else ``MHDB_KEY_FILE`` is read)."""
    @staticmethod
    def open_many(
        paths: Iterable[_PathLike], *, key_file: Optional[_PathLike] = None
    ) -> Shards:
        """Opens the indexes at ``paths`` read-only as one index (:class:`Shards`); shards
        given twice, or whose parameters differ where a query compares them, are refused
        (:class:`InvalidParameterError`)."""
    @staticmethod
    def upgrade(path: _PathLike, keep_old: bool = False, drop_sets: bool = False) -> bool:
        """Converts a format-version-1 or -2 index to the current format in place; ``False``
        when it was already current. ``drop_sets=True`` writes it without stored sets (for a
        keyed index whose version-2 sets leak its keyed hashes), and removes them from an
        index already current."""
    @overload
    @staticmethod
    def open_or_create(
        path: _PathLike,
        threshold: Optional[float] = None,
        *,
        num_perm: Optional[int] = None,
        scheme: str = "oph",
        seed: int = 0,
        shingle: str = "char:5",
        nfkc: Optional[bool] = None,
        lowercase: Optional[bool] = None,
        collapse_whitespace: Optional[bool] = None,
        bits: Optional[int] = None,
        band_slots: Optional[int] = None,
        bands: Optional[int] = None,
        rows: Optional[int] = None,
        bucket_cap: Optional[int] = 10000,
        store_sets: bool = False,
        key_file: Optional[_PathLike] = None,
        kind: _MinHash = "minhash",
        metric: Literal["jaccard", "containment"] = "jaccard",
    ) -> Index[_MinHash]:
        """Opens the index in ``path``, or creates it with these parameters (an existing
        index keeps its own)."""
    @overload
    @staticmethod
    def open_or_create(
        path: _PathLike,
        *,
        kind: _SimHash,
        seed: int = 0,
        shingle: str = "char:5",
        nfkc: bool = False,
        lowercase: bool = True,
        collapse_whitespace: bool = True,
        bucket_cap: Optional[int] = 10000,
        key_file: Optional[_PathLike] = None,
        max_hamming: int = 3,
        weighting: Literal["tf", "logtf"] = "tf",
    ) -> Index[_SimHash]: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *args: object) -> Literal[False]:
        """Closes the index; an exception inside the ``with`` block propagates."""
    def close(self) -> None:
        """Closes the index (releases its lock); later calls raise :class:`Error`."""
    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
    @property
    def path(self) -> str:
        """The directory of the index."""
    @property
    def read_only(self) -> bool:
        """Whether the index was opened read-only."""
    @property
    def write_failure(self) -> Optional[str]:
        """``None`` while the index may write; else the message of the I/O failure that
        made it refuse writes until reopened (a failure of the upkeep after a committed
        write is kept here, and the next write raises :class:`IoError` with it as
        ``cause``)."""
    @property
    def params(self) -> dict[str, Any]:
        """The stored parameters."""
    @property
    def hasher(self) -> MinHasher:
        """A :class:`MinHasher` with this index's signature parameters (and key, if keyed)."""
    def insert(
        self,
        key: _Key,
        text: Optional[str] = None,
        signature: Optional[_SignatureLike] = None,
        *,
        set_size: Optional[int] = None,
    ) -> None:
        """Inserts (or replaces) one document by text or signature; durable on return. A text
        without shingles (empty or white space only) could never be found and is refused with
        :class:`InvalidParameterError` naming the key, as ``mhdb add`` refuses it. A signature
        may carry ``set_size``, the number of distinct shingles it was made from, which a
        containment index needs (a text's is counted)."""
    @overload
    def insert_if_novel(
        self: Index[_MinHash],
        key: _Key,
        text: Optional[str] = None,
        signature: Optional[_SignatureLike] = None,
        *,
        threshold: Optional[float] = None,
    ) -> list[_MinHashMatch]:
        """Inserts one document unless a stored one is similar at ``threshold`` (the index's
        by default), as one step for every writing thread; durable on return. Returns the
        matches that made it a duplicate (nothing stored), or ``[]`` when it was stored."""
    @overload
    def insert_if_novel(
        self: Index[_SimHash],
        key: _Key,
        text: Optional[str] = None,
        signature: Optional[_SignatureLike] = None,
        *,
        threshold: Optional[float] = None,
    ) -> list[_SimHashMatch]:
        """In a SimHash index: matches ``(key, distance, cosine)``."""
    @overload
    def insert_if_novel(
        self,
        key: _Key,
        text: Optional[str] = None,
        signature: Optional[_SignatureLike] = None,
        *,
        threshold: Optional[float] = None,
    ) -> list[Union[_MinHashMatch, _SimHashMatch]]:
        """An index of either kind."""
    @overload
    def insert_many(
        self,
        items: Iterable[tuple[_Key, Union[str, _SignatureLike]]],
        texts: None = None,
        *,
        commit_every: int = 10000,
        on_commit: Optional[Callable[[int], object]] = None,
        novel_only: Literal[False] = False,
    ) -> int:
        """Inserts (or replaces) documents from ``(key, text_or_signature)`` pairs, committing
        ``commit_every`` at a time (each batch durable, then ``on_commit(total)``); batches
        are signed and written without the GIL while the next one is read. A bad document (a
        text without shingles, or a signature of the wrong length:
        :class:`InvalidParameterError`; a value of the wrong type:
        ``TypeError``; both naming its position and key, ``items[7] (key "a")``) stops the
        call: the batches committed before its batch stay, its batch (also the documents
        before it there) and everything after are not committed."""
    @overload
    def insert_many(
        self,
        items: Iterable[_Key],
        texts: Iterable[Union[str, _SignatureLike]],
        *,
        commit_every: int = 10000,
        on_commit: Optional[Callable[[int], object]] = None,
        novel_only: Literal[False] = False,
    ) -> int:
        """As above, with the keys and the texts (or signatures) from two iterables (errors
        name ``texts[7]``)."""
    @overload
    def insert_many(
        self,
        items: Iterable[tuple[_Key, Union[str, _SignatureLike]]],
        texts: None = None,
        *,
        commit_every: int = 10000,
        on_commit: Optional[Callable[[int], object]] = None,
        novel_only: Literal[True],
        threshold: Optional[float] = None,
    ) -> list[_NearDuplicate]:
        """Stores only the documents no stored document, nor an earlier one of the call, is
        similar to at ``threshold`` (the index's by default), each checked and stored in
        turn; returns the others, in input order, with their matches."""
    @overload
    def insert_many(
        self,
        items: Iterable[_Key],
        texts: Iterable[Union[str, _SignatureLike]],
        *,
        commit_every: int = 10000,
        on_commit: Optional[Callable[[int], object]] = None,
        novel_only: Literal[True],
        threshold: Optional[float] = None,
    ) -> list[_NearDuplicate]:
        """As above, with the keys and the texts from two iterables."""
    @overload
    def insert_arrow(
        self,
        data: _ArrowStream,
        *,
        id: str,
        text: Optional[str] = None,
        tokens: Optional[str] = None,
        keep: Optional[str] = None,
        commit_every: int = 10000,
        on_commit: Optional[Callable[[int], object]] = None,
        novel_only: Literal[False] = False,
    ) -> int:
        """Inserts (or replaces) the rows of an Arrow table or stream (``__arrow_c_stream__``:
        pyarrow, Polars, pandas, DuckDB), the key from column ``id`` (strings, binary or
        integers, an integer as its decimal digits) and the text from column ``text`` (or
        dotted paths into struct columns), read in Rust without the GIL; loaded and committed
        as :meth:`insert_many` loads its items. In an index of token lists, ``tokens`` names
        a list column of strings or integers instead of ``text`` (give exactly one). A
        missing column, one of the wrong type, or a row with a null or bad value (named by
        row and column: ``row 7: column "text" is null``) raises :class:`InvalidParameterError`; a failure of the stream itself
        :class:`Error`. ``keep`` names a column whose value each document keeps (a number
        or a string; null is none), which ``dedup_table(keep="max:COLUMN")`` ranks by, as
        ``mhdb add --keep-field`` captures it: the first load with ``keep`` fixes the
        index's keep field and type (the column's: integers, floats or strings), before the
        index has segments; a value that does not fit (NaN, another type) raises
        :class:`InvalidParameterError` naming its row."""
    @overload
    def insert_arrow(
        self,
        data: _ArrowStream,
        *,
        id: str,
        text: Optional[str] = None,
        tokens: Optional[str] = None,
        keep: Optional[str] = None,
        commit_every: int = 10000,
        on_commit: Optional[Callable[[int], object]] = None,
        novel_only: Literal[True],
        threshold: Optional[float] = None,
    ) -> list[_NearDuplicate]:
        """Stores only the rows no stored document, nor an earlier row, is similar to, as
        ``insert_many(novel_only=True)``; returns the others, in order, with their matches."""
    def insert_tokens(
        self, key: _Key, tokens: Union[Iterable[Union[str, int]], npt.NDArray[np.int64]]
    ) -> None:
        """Inserts (or replaces) one document given as a token list (``str`` and ``int``
        tokens, as :meth:`MinHasher.sketch_tokens` takes them) in an index created with
        ``shingle="tokens"`` or ``"tokens:N"``; durable on return. In an index of texts,
        :class:`ParameterMismatchError`."""
    @overload
    def query_tokens(
        self: Index[_MinHash],
        tokens: Union[Iterable[Union[str, int]], npt.NDArray[np.int64]],
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        exact: bool = True,
        top: Optional[int] = None,
        *,
        containment: None = None,
        recall: Optional[float] = None,
    ) -> list[_MinHashMatch]:
        """Documents similar to a token list in an index of token lists, as :meth:`query`
        answers (options and result alike). In an index of texts,
        :class:`ParameterMismatchError`."""
    @overload
    def query_tokens(
        self: Index[_MinHash],
        tokens: Union[Iterable[Union[str, int]], npt.NDArray[np.int64]],
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        exact: bool = True,
        top: Optional[int] = None,
        *,
        containment: float,
        recall: Optional[float] = None,
    ) -> list[_ContainmentMatch]: ...
    def delete(self, key: _Key) -> bool:
        """Deletes ``key``; returns whether it was present."""
    def get(self, key: _Key) -> Optional[npt.NDArray[np.uint64]]:
        """The stored (b-bit) signature of ``key``, or ``None``."""
    def __contains__(self, key: object, /) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[_Key]: ...
    def keys(self) -> list[_Key]:
        """Every live key, in no particular order."""
    @overload
    def query(
        self: Index[_MinHash],
        text: Optional[str] = None,
        signature: Optional[_SignatureLike] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        exact: bool = True,
        top: Optional[int] = None,
        *,
        containment: None = None,
        recall: Optional[float] = None,
        set_size: Optional[int] = None,
    ) -> list[_MinHashMatch]:
        """Documents similar to ``text`` or ``signature``, best first: ``(key, jaccard)``
        (the exact Jaccard near the threshold in an index with ``store_sets=True``, unless
        ``exact=False``); with ``top``, the ``top`` most similar (down to 0.3, or
        ``threshold``) without a threshold. ``threshold`` is in (0, 1]; ``limit`` and ``top``
        are positive and exclude each other (else :class:`InvalidParameterError`)."""
    @overload
    def query(
        self: Index[_MinHash],
        text: Optional[str] = None,
        signature: Optional[_SignatureLike] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        exact: bool = True,
        top: Optional[int] = None,
        *,
        containment: float,
        recall: Optional[float] = None,
        set_size: Optional[int] = None,
    ) -> list[_ContainmentMatch]:
        """A containment query, in an index created with ``metric="containment"``:
        ``(key, containment, jaccard)`` of the documents holding at least ``containment``
        of the query's shingles, best first (exact with ``store_sets=True``); with ``top``, the
        ``top`` best down to ``containment``. Not with ``threshold``. Decided by estimate (no
        stored sets, or ``exact=False``), ``recall`` in (0, 1) is about the share of the
        documents holding exactly ``containment`` of the query that are kept: 0.5 (the
        default) keeps the estimates that reach it, 0.95 nearly every true match and more
        false ones (reported with their estimates, some below ``containment``)."""
    @overload
    def query(
        self: Index[_SimHash],
        text: Optional[str] = None,
        signature: Optional[_SignatureLike] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        exact: bool = True,
        top: Optional[int] = None,
        *,
        containment: None = None,
        recall: Optional[float] = None,
        set_size: Optional[int] = None,
    ) -> list[_SimHashMatch]:
        """In a SimHash index: ``(key, distance, cosine)``, ``threshold`` a minimum cosine."""
    @overload
    def query(
        self,
        text: Optional[str] = None,
        signature: Optional[_SignatureLike] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        exact: bool = True,
        top: Optional[int] = None,
        *,
        containment: None = None,
        recall: Optional[float] = None,
        set_size: Optional[int] = None,
    ) -> list[Union[_MinHashMatch, _SimHashMatch]]:
        """An index of either kind (``Index[Literal["minhash", "simhash"]]``)."""
    @overload
    def query_many(
        self: Index[_MinHash],
        texts: Optional[Iterable[str]] = None,
        signatures: Optional[Iterable[_SignatureLike]] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        batch_size: int = 1024,
        top: Optional[int] = None,
        *,
        containment: None = None,
        recall: Optional[float] = None,
    ) -> QueryIterator[_MinHashMatch]:
        """Streams one list of matches per input, in order (``threshold``, ``limit``, ``top``
        as for :meth:`query`)."""
    @overload
    def query_many(
        self: Index[_MinHash],
        texts: Optional[Iterable[str]] = None,
        signatures: Optional[Iterable[_SignatureLike]] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        batch_size: int = 1024,
        top: Optional[int] = None,
        *,
        containment: float,
        recall: Optional[float] = None,
    ) -> QueryIterator[_ContainmentMatch]: ...
    @overload
    def query_many(
        self: Index[_SimHash],
        texts: Optional[Iterable[str]] = None,
        signatures: Optional[Iterable[_SignatureLike]] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        batch_size: int = 1024,
        top: Optional[int] = None,
        *,
        containment: None = None,
        recall: Optional[float] = None,
    ) -> QueryIterator[_SimHashMatch]: ...
    @overload
    def query_many(
        self,
        texts: Optional[Iterable[str]] = None,
        signatures: Optional[Iterable[_SignatureLike]] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        batch_size: int = 1024,
        top: Optional[int] = None,
        *,
        containment: None = None,
        recall: Optional[float] = None,
    ) -> QueryIterator[Union[_MinHashMatch, _SimHashMatch]]: ...
    @overload
    def dedup(
        self: Index[_MinHash], threshold: Optional[float] = None, format: Literal["pairs"] = "pairs"
    ) -> Iterator[_MinHashPair]:
        """Near-duplicates inside the index: ``"pairs"`` yields ``(a, b, jaccard)`` (``(a, b,
        distance, cosine)`` in a SimHash index), ``a`` the older document; ``"clusters"``
        yields lists of keys, the one to keep first; ``"drop"`` the keys to drop to keep one
        document of each cluster."""
    @overload
    def dedup(
        self: Index[_SimHash], threshold: Optional[float] = None, format: Literal["pairs"] = "pairs"
    ) -> Iterator[_SimHashPair]: ...
    @overload
    def dedup(
        self, threshold: Optional[float] = None, format: Literal["pairs"] = "pairs"
    ) -> Iterator[Union[_MinHashPair, _SimHashPair]]: ...
    @overload
    def dedup(
        self, threshold: Optional[float], format: Literal["clusters"]
    ) -> Iterator[list[_Key]]: ...
    @overload
    def dedup(
        self, threshold: Optional[float] = None, *, format: Literal["clusters"]
    ) -> Iterator[list[_Key]]: ...
    @overload
    def dedup(self, threshold: Optional[float], format: Literal["drop"]) -> Iterator[_Key]: ...
    @overload
    def dedup(
        self, threshold: Optional[float] = None, *, format: Literal["drop"]
    ) -> Iterator[_Key]: ...
    def dedup_table(
        self,
        threshold: Optional[float] = None,
        keep: str = "first",
        *,
        documents: Optional[Iterable[tuple[_Key, str]]] = None,
    ) -> Any:
        """The decision of ``mhdb dedup --apply --annotate`` for every stored document, as a
        ``pyarrow.Table`` sorted by id: ``id``, ``cluster`` (the kept document's id),
        ``keep`` (bool), ``best_match`` and ``similarity`` (float64; both null when kept).
        Ids are ``string`` when every stored key is UTF-8, else ``binary``. ``keep`` is
        ``dedup --keep``'s order: ``"first"`` (oldest), ``"last"`` (newest), ``"longest"`` or
        ``"shortest"`` (most or fewest distinct shingles, by the index's set sizes; documents
        without one last, ties to the earlier insert; an index without set sizes raises
        ``InvalidParameterError``), ``"max:FIELD"`` or ``"min:FIELD"`` (the highest or lowest
        value of the field ``mhdb add --keep-field FIELD`` captured; documents without one
        last, ties to the earlier insert; another field raises ``InvalidParameterError``).
        A containment index drops each document that another, ahead of it in the ``keep``
        order, holds at least ``threshold`` of (``|X ∩ Y| / |X|``), its similarity that
        containment: it reads ``documents`` again, ``(id, text)`` pairs as inserted (without
        them, or given them on another index, ``InvalidParameterError``)."""
    def commit(self) -> None:
        """Makes every write before this call durable."""
    def flush(self) -> None:
        """Writes the in-memory table to a segment."""
    def compact(self) -> None:
        """Merges every segment into one and drops deleted documents."""
    def stats(self) -> dict[str, Any]:
        """Counts, sizes and bucket distributions; ``"sets_derivation"`` is how stored sets
        were derived (``"unkeyed"``, ``"keyed"``, ``"keyed-v2-leaking"``, or ``None``
        without sets); ``"keep"`` the keep field (``{"field", "type", "with", "without"}``,
        or ``None`` without one)."""
    def verify(self) -> dict[str, Any]:
        """``{"ok": bool, "files_checked": int, "problems": list[Error]}``."""
    def export(self, dest: _PathLike) -> None:
        """Writes a compacted copy of the live documents to ``dest``."""
    def merge(self, sources: Union[_PathLike, Iterable[_PathLike]]) -> int:
        """Adds every live document of the indexes at ``sources``; returns how many."""
    def refresh(self) -> None:
        """Moves a read-only handle to the newest committed state."""

# Shards: indexes opened read-only as one (``Index.open_many``).

@final
class Shards(Generic[_KindT]):
    """Indexes opened read-only as one, in the order given (:meth:`Index.open_many`),
    answering as the index ``Index.merge`` would make of them: a key stored in two shards
    answers from the later one; "first" means shard order, then insertion order. ``len()``
    sums the shards' counts (a key stored in two counts in both). The write methods raise
    :class:`ReadOnlyError`. Every method that does real work releases the GIL."""

    def __enter__(self) -> Self: ...
    def __exit__(self, *args: object) -> Literal[False]:
        """Closes every shard; an exception inside the ``with`` block propagates."""
    def close(self) -> None:
        """Closes every shard; later calls raise :class:`Error`."""
    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
    @property
    def paths(self) -> list[str]:
        """The shards' directories, in order."""
    @property
    def read_only(self) -> Literal[True]:
        """Always ``True``."""
    @property
    def params(self) -> dict[str, Any]:
        """The parameters queries are answered with (the first shard's)."""
    @overload
    def query(
        self: Shards[_MinHash],
        text: Optional[str] = None,
        signature: Optional[_SignatureLike] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        exact: bool = True,
        top: Optional[int] = None,
        *,
        containment: None = None,
        recall: Optional[float] = None,
        set_size: Optional[int] = None,
    ) -> list[_MinHashMatch]:
        """Documents similar to ``text`` or ``signature`` over every shard, best first, as
        :meth:`Index.query` answers on the merged index (``top`` runs across shards)."""
    @overload
    def query(
        self: Shards[_MinHash],
        text: Optional[str] = None,
        signature: Optional[_SignatureLike] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        exact: bool = True,
        top: Optional[int] = None,
        *,
        containment: float,
        recall: Optional[float] = None,
        set_size: Optional[int] = None,
    ) -> list[_ContainmentMatch]: ...
    @overload
    def query(
        self: Shards[_SimHash],
        text: Optional[str] = None,
        signature: Optional[_SignatureLike] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        exact: bool = True,
        top: Optional[int] = None,
        *,
        containment: None = None,
        recall: Optional[float] = None,
        set_size: Optional[int] = None,
    ) -> list[_SimHashMatch]: ...
    @overload
    def query(
        self,
        text: Optional[str] = None,
        signature: Optional[_SignatureLike] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        exact: bool = True,
        top: Optional[int] = None,
        *,
        containment: None = None,
        recall: Optional[float] = None,
        set_size: Optional[int] = None,
    ) -> list[Union[_MinHashMatch, _SimHashMatch]]: ...
    @overload
    def query_many(
        self: Shards[_MinHash],
        texts: Optional[Iterable[str]] = None,
        signatures: Optional[Iterable[_SignatureLike]] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        batch_size: int = 1024,
        top: Optional[int] = None,
        *,
        containment: None = None,
        recall: Optional[float] = None,
    ) -> QueryIterator[_MinHashMatch]:
        """Streams one list of matches per input, in order, as :meth:`Index.query_many`."""
    @overload
    def query_many(
        self: Shards[_MinHash],
        texts: Optional[Iterable[str]] = None,
        signatures: Optional[Iterable[_SignatureLike]] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        batch_size: int = 1024,
        top: Optional[int] = None,
        *,
        containment: float,
        recall: Optional[float] = None,
    ) -> QueryIterator[_ContainmentMatch]: ...
    @overload
    def query_many(
        self: Shards[_SimHash],
        texts: Optional[Iterable[str]] = None,
        signatures: Optional[Iterable[_SignatureLike]] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        batch_size: int = 1024,
        top: Optional[int] = None,
        *,
        containment: None = None,
        recall: Optional[float] = None,
    ) -> QueryIterator[_SimHashMatch]: ...
    @overload
    def query_many(
        self,
        texts: Optional[Iterable[str]] = None,
        signatures: Optional[Iterable[_SignatureLike]] = None,
        threshold: Optional[float] = None,
        limit: Optional[int] = None,
        batch_size: int = 1024,
        top: Optional[int] = None,
        *,
        containment: None = None,
        recall: Optional[float] = None,
    ) -> QueryIterator[Union[_MinHashMatch, _SimHashMatch]]: ...
    def get(self, key: _Key) -> Optional[npt.NDArray[np.uint64]]:
        """The stored signature of ``key`` in the last shard holding it, or ``None``."""
    def __contains__(self, key: object, /) -> bool: ...
    def __len__(self) -> int: ...
    @overload
    def dedup(
        self: Shards[_MinHash],
        threshold: Optional[float] = None,
        format: Literal["pairs"] = "pairs",
    ) -> Iterator[_MinHashPair]:
        """Near-duplicates across the shards, as :meth:`Index.dedup` finds them in the
        merged index (without merging)."""
    @overload
    def dedup(
        self: Shards[_SimHash],
        threshold: Optional[float] = None,
        format: Literal["pairs"] = "pairs",
    ) -> Iterator[_SimHashPair]: ...
    @overload
    def dedup(
        self, threshold: Optional[float] = None, format: Literal["pairs"] = "pairs"
    ) -> Iterator[Union[_MinHashPair, _SimHashPair]]: ...
    @overload
    def dedup(
        self, threshold: Optional[float], format: Literal["clusters"]
    ) -> Iterator[list[_Key]]: ...
    @overload
    def dedup(
        self, threshold: Optional[float] = None, *, format: Literal["clusters"]
    ) -> Iterator[list[_Key]]: ...
    @overload
    def dedup(self, threshold: Optional[float], format: Literal["drop"]) -> Iterator[_Key]: ...
    @overload
    def dedup(
        self, threshold: Optional[float] = None, *, format: Literal["drop"]
    ) -> Iterator[_Key]: ...
    def stats(self) -> dict[str, Any]:
        """``{"shards": [...each shard's Index.stats, with "path"...], "total": {...}}``."""
    def verify(self) -> dict[str, Any]:
        """Every shard verified: ``{"ok": bool, "files_checked": int, "problems": list[Error]}``."""
    def refresh(self) -> None:
        """Moves every shard to its newest committed state."""
    def insert(self, *args: object, **kwargs: object) -> NoReturn:
        """Raises :class:`ReadOnlyError`."""
    def insert_if_novel(self, *args: object, **kwargs: object) -> NoReturn:
        """Raises :class:`ReadOnlyError`."""
    def insert_many(self, *args: object, **kwargs: object) -> NoReturn:
        """Raises :class:`ReadOnlyError`."""
    def delete(self, *args: object, **kwargs: object) -> NoReturn:
        """Raises :class:`ReadOnlyError`."""
    def merge(self, *args: object, **kwargs: object) -> NoReturn:
        """Raises :class:`ReadOnlyError`."""
    def commit(self) -> NoReturn:
        """Raises :class:`ReadOnlyError`."""
    def flush(self) -> NoReturn:
        """Raises :class:`ReadOnlyError`."""
    def compact(self) -> NoReturn:
        """Raises :class:`ReadOnlyError`."""
