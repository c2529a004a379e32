"""mhdb on Apache Spark: sign documents, build index shards, and deduplicate on a cluster.

Install with ``pip install './python[spark]'`` (PySpark with its Arrow extras; Java 17+).

- :func:`sign` computes signatures on the executors, one Rust call per Arrow batch.
- :func:`build_shards` writes one mhdb database per partition, committed by an atomic rename so
  that a retried or speculative task never leaves a half-written or duplicated shard;
  :func:`merge` combines shards into one index and :func:`export` makes the copy to ship.
- :func:`dedup` finds the same pairs as ``mhdb dedup`` (same band keys, same bucket cap, same
  verification), the connected components of those pairs (large-star / small-star), and which
  document of each to keep by the rule of ``mhdb dedup --format drop``. Only counts reach the
  driver.

Parameters (``params``) are those of :meth:`mhdb.Index.create`, as a dict: either an index's
``Index.params`` or any subset of ``num_perm, scheme, seed, shingle, nfkc, lowercase,
collapse_whitespace, bits, band_slots, bands, rows, bucket_cap`` plus ``threshold``; bands and
rows are tuned for the threshold exactly as ``Index.create`` tunes them. ``python/SPARK.md`` says what
storage a real cluster needs.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt

from . import _mhdb

try:
    import pyarrow as pa
    import pyarrow.compute  # makes pa.compute available
    from pyspark import StorageLevel, TaskContext
    from pyspark.sql import Column, DataFrame
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("mhdb.spark needs pyspark and pyarrow: pip install './python[spark]'") from e

__all__ = [
    "resolve_params",
    "sign",
    "build_shards",
    "Shard",
    "merge",
    "export",
    "dedup",
    "DedupResult",
]

_SKETCH_KEYS = ("num_perm", "scheme", "seed", "shingle", "nfkc", "lowercase", "collapse_whitespace")
_INDEX_KEYS = _SKETCH_KEYS + ("bits", "band_slots", "bands", "rows", "bucket_cap")

Params = Mapping[str, Any]


def resolve_params(
    params: Optional[Params] = None, threshold: Optional[float] = None
) -> dict[str, Any]:
    """The full parameter dict an index created with ``params`` would have (as
    ``Index.params`` returns it). ``threshold`` overrides ``params["threshold"]``; 0.8 when
    neither gives one. Unknown names raise ``TypeError``."""
    given = dict(params or {})
    t = given.pop("threshold", None)
    # ``Index.params`` also names the index kind and whether it stores shingle sets: this
    # module builds and deduplicates MinHash indexes by their signatures only.
    kind = given.pop("kind", "minhash")
    if kind != "minhash":
        raise ValueError(f"mhdb.spark works on MinHash indexes, not kind={kind!r}")
    metric = given.pop("metric", "jaccard")
    if metric != "jaccard":
        raise ValueError(f"mhdb.spark deduplicates by Jaccard, not metric={metric!r}")
    if given.pop("store_sets", False):
        raise ValueError(
            "mhdb.spark verifies by signature and does not carry shingle sets: "
            "store_sets=True is not supported here"
        )
    if threshold is not None:
        t = threshold
    unknown = sorted(set(given) - set(_INDEX_KEYS))
    if unknown:
        raise TypeError(f"unknown index parameter(s) {unknown}; known: {', '.join(_INDEX_KEYS)}")
    if given.get("bucket_cap", 1) is None:
        given["bucket_cap"] = 0  # Index.params says None for "no cap"; create spells it 0
    return dict(_mhdb.index_params_for(0.8 if t is None else float(t), **given))


def _hasher(p: Params) -> _mhdb.MinHasher:
    return _mhdb.MinHasher(**{k: p[k] for k in _SKETCH_KEYS})


def _create_kwargs(p: Params) -> dict[str, Any]:
    kw = {k: p[k] for k in _INDEX_KEYS}
    kw["bucket_cap"] = kw["bucket_cap"] or 0
    return kw


# ---------------------------------------------------------------------------------------------
# Arrow helpers: fixed-width binary columns <-> numpy matrices without a Python loop per row.


def _cap_ranks(keys: list[str]) -> np.ndarray:
    """The engine's bucket-cap rank of each key, as int64 ordered as the uint64 rank."""
    from ._mhdb import cap_ranks

    return (cap_ranks(keys) ^ np.uint64(1 << 63)).view(np.int64)


def _texts(batch: pa.RecordBatch, text_col: str, id_col: str) -> list[str]:
    col = batch.column(text_col)
    if col.null_count:
        first = pa.compute.index(pa.compute.is_null(col), True).as_py()
        raise ValueError(
            f"column {text_col!r} is null for {id_col}={batch.column(id_col)[first].as_py()!r}"
        )
    texts: list[str] = col.to_pylist()
    return texts


def _fixed_binary(matrix: np.ndarray) -> pa.Array:
    """Each row of a 2-D array as one Arrow binary value (its little-endian bytes)."""
    matrix = np.ascontiguousarray(matrix)
    n, width = matrix.shape[0], matrix.shape[1] * matrix.dtype.itemsize
    offsets = (np.arange(n + 1, dtype=np.int64) * width).astype(np.int32)
    return pa.Array.from_buffers(
        pa.binary(),
        n,
        [
            None,
            pa.py_buffer(offsets),
            pa.py_buffer(matrix.astype(matrix.dtype.newbyteorder("<"), copy=False)),
        ],
    )


def _byte_rows(col: Union[pa.Array, pa.ChunkedArray], width: int) -> npt.NDArray[np.uint8]:
    """A binary column of ``width``-byte values as an ``(n, width)`` ``uint8`` matrix (a view
    of the Arrow buffer, no copy)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    n = len(col)
    if n == 0:
        return np.zeros((0, width), dtype=np.uint8)
    if col.null_count:
        raise ValueError("a signature is null")
    _, offsets_buf, data = col.buffers()
    offset_type = np.int64 if pa.types.is_large_binary(col.type) else np.int32
    offsets = np.frombuffer(
        offsets_buf,
        dtype=offset_type,
        count=n + 1,
        offset=col.offset * np.dtype(offset_type).itemsize,
    )
    if not np.all(np.diff(offsets) == width):
        raise ValueError(f"signatures must all be {width} bytes")
    flat = np.frombuffer(data, dtype=np.uint8, count=n * width, offset=int(offsets[0]))
    return flat.reshape(n, width)


def _empty_sets(sigs: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
    """Which rows are the signature of the empty shingle set (every slot empty)."""
    empty: npt.NDArray[np.bool_] = np.all(sigs == np.uint64(0xFFFFFFFFFFFFFFFF), axis=1)
    return empty


def _arrow_type(df: DataFrame, col: str) -> T.DataType:
    if col not in df.columns:
        raise ValueError(f"no column {col!r} in the DataFrame (it has {df.columns})")
    return df.schema[col].dataType


# ---------------------------------------------------------------------------------------------
# sign


def sign(
    df: DataFrame,
    id_col: str = "id",
    text_col: str = "text",
    params: Optional[Params] = None,
) -> DataFrame:
    """``(id, signature)`` for every row: ``signature`` is ``num_perm`` little-endian
    ``uint64`` slots as binary, bit-identical to ``MinHasher.sketch`` with ``params``.

    Computed on the executors with ``mapInArrow``: one ``MinHasher.sketch_many`` call per
    Arrow batch (``spark.sql.execution.arrow.maxRecordsPerBatch`` rows), which signs on every
    core of the executor without the GIL. A null text raises ``ValueError`` naming the id."""
    p = resolve_params(params)
    id_type = _arrow_type(df, id_col)
    _arrow_type(df, text_col)
    schema = T.StructType(
        [T.StructField(id_col, id_type), T.StructField("signature", T.BinaryType(), False)]
    )

    def batches(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        hasher = _hasher(p)
        for batch in it:
            sigs = hasher.sketch_many(_texts(batch, text_col, id_col))
            yield pa.RecordBatch.from_arrays(
                [batch.column(id_col), _fixed_binary(sigs)], names=[id_col, "signature"]
            )

    return df.select(id_col, text_col).mapInArrow(batches, schema)


# ---------------------------------------------------------------------------------------------
# build_shards, merge, export


@dataclass(frozen=True)
class Shard:
    """One committed shard: its partition number, directory, the documents it holds, and
    the documents it skipped because their text has no shingles (as ``mhdb add`` refuses
    them: such a text is similar to nothing)."""

    partition: int
    path: str
    docs: int
    skipped: int


# Beside each shard's index, written before the rename that commits both.
_MANIFEST = "shard.json"


def _write_durably(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def build_shards(
    df: DataFrame,
    out_dir: str,
    params: Optional[Params] = None,
    shards: Optional[int] = None,
    id_col: str = "id",
    text_col: str = "text",
    commit_every: int = 10000,
) -> list[Shard]:
    """Writes one mhdb database per partition into ``out_dir`` (``shard-00000``, ...) and
    returns the committed shards (one small row per shard is collected).

    ``shards=N`` repartitions by ``id_col`` first (so a key lands in exactly one shard);
    ``None`` keeps the DataFrame's partitions. Ids become keys as ``str`` (string columns
    as is, others by Spark's cast to string).

    Each task builds its database in ``out_dir/.tmp-shard-P-attemptA`` and renames it to
    ``shard-P`` once it is durable; if ``shard-P`` already exists (a speculative or
    retried attempt committed first), the attempt deletes its copy and reports the existing
    one, whose content is the same. Temporary directories of failed attempts are removed
    when the job ends. ``out_dir`` must be one filesystem that every executor and the driver
    see with atomic directory rename (local disk in local mode; NFS/Lustre/HDFS-fuse and the
    like on a cluster, not an object store: see ``python/SPARK.md``)."""
    p = resolve_params(params)
    kwargs = _create_kwargs(p)
    _arrow_type(df, id_col)
    _arrow_type(df, text_col)
    out_dir = os.path.abspath(os.fspath(out_dir))
    os.makedirs(out_dir, exist_ok=True)
    data = df.select(F.col(id_col).cast("string").alias("key"), F.col(text_col).alias("text"))
    if shards is not None:
        if shards < 1:
            raise ValueError(f"shards must be at least 1, got {shards}")
        data = data.repartition(shards, "key")
    schema = T.StructType(
        [
            T.StructField("partition", T.IntegerType(), False),
            T.StructField("path", T.StringType(), False),
            T.StructField("docs", T.LongType(), False),
            T.StructField("skipped", T.LongType(), False),
        ]
    )

    def write(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        ctx = TaskContext.get()
        part = ctx.partitionId()
        final = os.path.join(out_dir, f"shard-{part:05d}")
        if not os.path.exists(final):
            tmp = os.path.join(out_dir, f".tmp-shard-{part:05d}-attempt{ctx.taskAttemptId()}")
            if os.path.exists(tmp):
                shutil.rmtree(tmp)
            os.makedirs(tmp)
            docs = skipped = 0
            with _mhdb.Index.create(os.path.join(tmp, "index"), p["threshold"], **kwargs) as idx:
                hasher = idx.hasher
                for batch in it:
                    keys = batch.column("key")
                    if keys.null_count:
                        raise ValueError(f"column {id_col!r} has a null id")
                    sigs = hasher.sketch_many(_texts(batch, "text", "key"))
                    # Like `mhdb add`, a text without shingles is not stored (similar to nothing).
                    shingled = ~_empty_sets(sigs)
                    skipped += int(len(sigs) - shingled.sum())
                    idx.insert_many(
                        keys.filter(pa.array(shingled)).to_pylist(),
                        sigs[shingled],
                        commit_every=commit_every,
                    )
                idx.commit()
                docs = len(idx)
            _write_durably(
                os.path.join(tmp, _MANIFEST),
                json.dumps({"partition": part, "docs": docs, "skipped": skipped}),
            )
            _fsync_dir(tmp)
            try:
                os.rename(tmp, final)
            except OSError:
                if not os.path.isdir(final):
                    raise
                shutil.rmtree(tmp, ignore_errors=True)  # another attempt committed first
            _fsync_dir(out_dir)
        with open(os.path.join(final, _MANIFEST)) as f:
            m = json.load(f)
        yield pa.RecordBatch.from_arrays(
            [
                pa.array([part], pa.int32()),
                pa.array([os.path.join(final, "index")]),
                pa.array([m["docs"]], pa.int64()),
                pa.array([m["skipped"]], pa.int64()),
            ],
            schema=pa.schema(
                [
                    ("partition", pa.int32(), False),
                    ("path", pa.string(), False),
                    ("docs", pa.int64(), False),
                    ("skipped", pa.int64(), False),
                ]
            ),
        )

    try:
        rows = data.mapInArrow(write, schema).collect()
    finally:
        for name in os.listdir(out_dir):
            if name.startswith(".tmp-shard-"):
                shutil.rmtree(os.path.join(out_dir, name), ignore_errors=True)
    return sorted(
        (Shard(r.partition, r.path, r.docs, r.skipped) for r in rows), key=lambda s: s.partition
    )


def merge(
    shards: Sequence[Union[Shard, str, os.PathLike[str]]],
    dest: Union[str, os.PathLike[str]],
    params: Optional[Params] = None,
) -> int:
    """Creates the index ``dest`` (with ``params``, or the first shard's parameters) and adds
    every shard to it, in order; returns the number of documents added. Each shard is merged
    atomically: an interrupted merge leaves ``dest`` holding whole shards only."""
    paths = [s.path if isinstance(s, Shard) else os.fspath(s) for s in shards]
    if not paths:
        raise ValueError("no shard to merge")
    if params is None:
        with _mhdb.Index.open(paths[0], read_only=True) as first:
            params = first.params
    p = resolve_params(params)
    with _mhdb.Index.create(dest, p["threshold"], **_create_kwargs(p)) as idx:
        return idx.merge(paths)


def export(index: Union[str, os.PathLike[str]], dest: Union[str, os.PathLike[str]]) -> None:
    """Writes a compacted, self-contained copy of the index at ``index`` to ``dest`` (renamed
    into place when complete): the directory to ship to the machines that query it."""
    with _mhdb.Index.open(index, read_only=True) as idx:
        idx.export(dest)


# ---------------------------------------------------------------------------------------------
# dedup


@dataclass
class DedupResult:
    """What :func:`dedup` returns.

    - ``docs``: ``(id, cluster, keep)`` for every input row. ``cluster`` is the id of the
      first document (in ``order_col``, then id order) of the row's connected component in
      the graph of verified pairs (its own id for a document with no pair). ``keep`` is
      False for exactly the ids ``mhdb dedup --format drop --keep KEEP_BY`` prints.
    - ``pairs``: ``(a, b, jaccard)``, every verified pair once, ``a`` before ``b`` in order.
    - ``cc_rounds``, ``keep_rounds``: the connected-component and keep rounds the driver ran.

    Both DataFrames are lazy over cached intermediate data; :meth:`unpersist` frees it."""

    docs: DataFrame
    pairs: DataFrame
    cc_rounds: int
    keep_rounds: int
    _cached: list[DataFrame]

    def unpersist(self) -> None:
        for df in self._cached:
            df.unpersist()


_KEEP_NAMES = ("first", "last", "longest", "shortest")


@dataclass(frozen=True)
class _KeepOrder:
    """The order ``keep_by`` visits documents in, as the engine's ``dedup --keep`` does: by
    node (``first``), by node reversed (``last``), or by a value (``longest``/``shortest``:
    the set size; ``max:COL``/``min:COL``: a column), highest or lowest first, documents
    without one last, ties to the earlier node."""

    name: str
    column: Optional[str] = None

    @staticmethod
    def parse(keep_by: str, df: DataFrame) -> _KeepOrder:
        if keep_by in _KEEP_NAMES:
            return _KeepOrder(keep_by)
        how, _, col = keep_by.partition(":")
        if how not in ("max", "min") or not col:
            raise ValueError(
                f"keep_by={keep_by!r} is not a keep order: one of "
                f"{', '.join(_KEEP_NAMES)}, max:COLUMN, min:COLUMN"
            )
        kind = _arrow_type(df, col)
        if not isinstance(kind, (T.NumericType, T.StringType, T.BinaryType)) or isinstance(
            kind, T.DecimalType
        ):
            raise ValueError(
                f"keep_by={keep_by!r}: column {col!r} is {kind}, not a number or string"
            )
        return _KeepOrder(how, col)

    @property
    def ranked(self) -> bool:
        """Whether documents are ranked by a value (column ``v``)."""
        return self.name not in ("first", "last")

    def earlier(self, a: str, b: str) -> Column:
        """Whether node ``a`` (value ``a_v``) comes before node ``b`` (value ``b_v``)."""
        na, nb = F.col(a), F.col(b)
        if not self.ranked:
            return na < nb if self.name == "first" else na > nb
        va, vb = F.col(f"{a}_v"), F.col(f"{b}_v")
        better = va > vb if self.name in ("longest", "max") else va < vb
        return (
            (va.isNotNull() & vb.isNull())
            | F.coalesce(better, F.lit(False))
            | (va.eqNullSafe(vb) & (na < nb))
        )

    def best(self, v: Column) -> Column:
        """The aggregate of the value that comes first (nulls ignored)."""
        return F.max(v) if self.name in ("longest", "max") else F.min(v)


def _checkpoint(df: DataFrame) -> DataFrame:
    """Cuts the lineage of an iterated DataFrame (reliable if a checkpoint dir is set)."""
    sc = df.sparkSession.sparkContext
    return df.checkpoint() if sc.getCheckpointDir() else df.localCheckpoint()


def dedup(
    df: DataFrame,
    id_col: str = "id",
    text_col: str = "text",
    threshold: Optional[float] = None,
    params: Optional[Params] = None,
    order_col: Optional[str] = None,
    max_rounds: int = 1000,
    keep_by: str = "first",
) -> DedupResult:
    """Near-duplicates of ``df`` on the cluster; the same answer as ``mhdb dedup`` on an index
    holding the same documents inserted in ``order_col`` order (ties and the default: id
    order), with the same parameters.

    Steps: signatures, exact hashes and 32-bit band keys per Arrow batch; exact copies
    grouped by hash as the engine groups them (each group's first document represents it, the
    others pair with it at similarity 1 and are dropped); postings ``(band, key, doc)``
    shuffled by ``(band, key)``; a bucket over ``bucket_cap`` keeps the ``bucket_cap``
    documents whose keys (ids as strings) hash lowest, as the engine's segments and dedup do
    (``format/segment.md``, "Bucket caps"), then each copy stands for its representative;
    candidate pairs of a bucket are verified by a join
    against the b-bit signatures (the engine's estimate and ``threshold``, default
    ``params["threshold"]``); connected components by alternating large-star / small-star
    rounds; ``keep`` by the engine's greedy rule (documents in order: one with an unassigned
    neighbour keeps and takes its unassigned neighbours), computed as the lexicographically
    first maximal independent set in rounds. Ids must be unique and not null.

    ``keep_by`` is the order the keep rule (and the choice of each group of exact copies'
    representative) visits documents in, as ``mhdb dedup --keep`` takes it: ``first`` (the
    default: ``order_col``, then id order), ``last``, ``longest`` / ``shortest`` (by set
    size: distinct shingles), or ``max:COLUMN`` / ``min:COLUMN`` (a numeric or string column
    of ``df``); nulls last, ties to the earlier document."""
    p = resolve_params(params)
    t = float(p["threshold"] if threshold is None else threshold)
    if not 0.0 < t <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {t}")
    id_type = _arrow_type(df, id_col)
    _arrow_type(df, text_col)
    if order_col is not None:
        _arrow_type(df, order_col)
    keep = _KeepOrder.parse(keep_by, df)
    bits, k, bands, rows = p["bits"], p["num_perm"], p["bands"], p["rows"]
    cap = p["bucket_cap"] or None
    width = _mhdb.bbit_packed_len(k, bits)

    dup = (
        df.groupBy(id_col)
        .count()
        .filter((F.col("count") > 1) | F.col(id_col).isNull())
        .limit(1)
        .collect()
    )
    if dup:
        raise ValueError(
            f"ids must be unique and not null: {id_col}={dup[0][0]!r} occurs {dup[0][1]} times"
        )

    # A document is a node, ordered as the engine orders docnos.
    order_type = df.schema[order_col].dataType if order_col else None
    cols = [id_col, text_col] + ([order_col] if order_col else [])
    if keep.column is not None:
        cols.append(keep.column)
    out_fields = [T.StructField("id", id_type, False)]
    if order_col:
        out_fields.append(T.StructField("o", order_type))
    out_fields += [
        T.StructField("sig", T.BinaryType(), False),
        T.StructField("bkeys", T.ArrayType(T.IntegerType(), False), False),
        # What a bucket cap ranks the document by (the engine's: xxh3-64 of its key, the id
        # as a string), as a signed long ordered as the unsigned hash.
        T.StructField("rank", T.LongType(), False),
        # The exact hash of the normalized text (16 bytes, little-endian), null for a text
        # without shingles (which the engine does not store).
        T.StructField("exact", T.BinaryType(), True),
    ]
    if keep.column is not None:
        out_fields.append(T.StructField("v", df.schema[keep.column].dataType))
    elif keep.ranked:
        out_fields.append(T.StructField("v", T.LongType()))

    def sign_batches(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        hasher = _hasher(p)
        for batch in it:
            texts = _texts(batch, text_col, id_col)
            sigs = hasher.sketch_many(texts)
            # The engine buckets by the top 32 bits of each 64-bit band key.
            keys32 = (
                (hasher.band_keys(sigs, bands, rows) >> np.uint64(32))
                .astype(np.uint32)
                .view(np.int32)
            )
            # Stored as an index stores them: the engine's b-bit packing.
            packed = _mhdb.bbit_pack(sigs, bits)
            # A text without shingles is similar to nothing (the engine does not store it):
            # it gets no band keys, hence no pair.
            shingled = ~_empty_sets(sigs)
            counts = np.where(shingled, bands, 0).astype(np.int32)
            offsets = np.concatenate([np.zeros(1, np.int32), np.cumsum(counts, dtype=np.int32)])
            keys = pa.ListArray.from_arrays(
                pa.array(offsets), pa.array(keys32[shingled].reshape(-1))
            )
            arrays = [batch.column(id_col)] + ([batch.column(order_col)] if order_col else [])
            ranks = _cap_ranks(batch.column("_key").to_pylist())
            exact = _fixed_binary(hasher.exact_hashes(texts))
            exact = pa.compute.if_else(pa.array(shingled), exact, pa.scalar(None, pa.binary()))
            arrays += [_fixed_binary(packed), keys, pa.array(ranks), exact]
            if keep.column is not None:
                arrays.append(batch.column(keep.column))
            elif keep.ranked:
                sizes = hasher.set_sizes(texts).astype(np.int64)
                arrays.append(pa.array(sizes, mask=~shingled))
            yield pa.RecordBatch.from_arrays(arrays, names=[f.name for f in out_fields])

    keyed = df.select(*cols, F.col(id_col).cast("string").alias("_key"))
    signed = keyed.mapInArrow(sign_batches, T.StructType(out_fields))
    node = F.struct(F.col("o"), F.col("id")) if order_col else F.col("id")
    value = ["v"] if keep.ranked else []
    # Hash-partitioned by node once and cached: the two verify joins and the final joins on
    # node then shuffle only their other side, never the signatures again. The count
    # materializes the cache before any job reads it: concurrent stages reading a cache
    # not yet filled would each sign the corpus.
    signed = (
        signed.select(node.alias("node"), "id", "sig", "bkeys", "rank", "exact", *value)
        .repartition("node")
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    signed.count()

    copies = _checkpoint(_exact_copies(signed, keep))
    copy_edges = copies.select(
        F.least("copy", "rep").alias("a"),
        F.greatest("copy", "rep").alias("b"),
        F.lit(1.0).alias("jaccard"),
    )
    # In the buckets a copy stands for its representative, once the bucket is cut to its cap
    # over every document in it (as segments cut it).
    standing = signed.join(copies.withColumnRenamed("copy", "node"), "node", "left").select(
        F.coalesce("rep", "node").alias("rep"), "node", "rank", "bkeys"
    )

    # Buckets by one hash aggregation over (band, key): no sort of the postings, and the
    # single-document buckets (most of them) end there. A bucket keeps at most `bucket_cap`
    # documents, chosen as the engine chooses them, and emits every pair of
    # them; pairs stream out row by row (one row per first member), so a capped hot bucket
    # never holds its cap² / 2 pairs in memory at once.
    postings = standing.select(
        "rep", "node", "rank", F.posexplode("bkeys").alias("band", "key")
    )
    if cap is None:
        members = F.array_sort(F.array_distinct(F.collect_list("rep")))
    else:
        # The `cap` members whose keys hash lowest (ties: the earlier node), as the engine
        # keeps them, then their representatives in node order.
        ranked = F.array_sort(F.collect_list(F.struct("rank", "node", "rep")))
        members = F.array_sort(
            F.array_distinct(F.transform(F.slice(ranked, 1, cap), lambda x: x["rep"]))
        )
    buckets = (
        postings.groupBy("band", "key")
        .agg(members.alias("n"))
        .filter(F.size("n") > 1)
        .select("n", F.posexplode("n").alias("i", "a"))
    )
    later = F.slice("n", F.col("i") + 2, F.size("n") - F.col("i") - 1)
    candidates = (
        buckets.select("a", F.explode(later).alias("b"))
        # Partitioned by a (as the signatures are by node): distinct needs no other shuffle
        # and the join on a shuffles neither side again.
        .repartition("a")
        .distinct()
    )
    sigs = signed.select("node", "sig")
    with_sigs = candidates.join(
        sigs.withColumnRenamed("node", "a").withColumnRenamed("sig", "sa"), "a"
    ).join(sigs.withColumnRenamed("node", "b").withColumnRenamed("sig", "sb"), "b")
    node_type = signed.schema["node"].dataType
    pair_schema = T.StructType(
        [
            T.StructField("a", node_type, False),
            T.StructField("b", node_type, False),
            T.StructField("jaccard", T.DoubleType(), False),
        ]
    )

    def verify(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in it:
            sa = _byte_rows(batch.column("sa"), width)
            sb = _byte_rows(batch.column("sb"), width)
            j = _mhdb.bbit_estimate(sa, sb, k, bits)
            hit = pa.array(j >= t)
            yield pa.RecordBatch.from_arrays(
                [
                    batch.column("a").filter(hit),
                    batch.column("b").filter(hit),
                    pa.array(j).filter(hit),
                ],
                names=["a", "b", "jaccard"],
            )

    near = _checkpoint(with_sigs.select("a", "b", "sa", "sb").mapInArrow(verify, pair_schema))
    edges = near.union(copy_edges)
    cached = [signed]

    parent, cc_rounds = _components(
        edges.select(F.col("b").alias("v"), F.col("a").alias("m")), max_rounds
    )
    # The greedy rule among representatives, each pair oriented by the keep order; their
    # copies are all dropped.
    status, keep_rounds = _greedy_keep(_oriented(near, signed, keep), max_rounds)
    status = status.union(copies.select(F.col("copy").alias("n"), F.lit(_DROPPED).alias("st")))

    def ident(c: Column) -> Column:
        return c["id"] if order_col else c

    docs = (
        signed.select("node", "id")
        .join(parent, signed["node"] == parent["v"], "left")
        .join(status, signed["node"] == status["n"], "left")
        .select(
            F.col("id").alias(id_col),
            ident(F.coalesce(F.col("m"), F.col("node"))).alias("cluster"),
            F.coalesce(F.col("st") != F.lit(_DROPPED), F.lit(True)).alias("keep"),
        )
    )
    pairs = edges.select(ident(F.col("a")).alias("a"), ident(F.col("b")).alias("b"), "jaccard")
    return DedupResult(docs, pairs, cc_rounds, keep_rounds, cached)


def _exact_copies(signed: DataFrame, keep: _KeepOrder) -> DataFrame:
    """``(copy, rep)`` for every exact copy: documents with equal exact hashes form a group
    whose member first in keep order represents it (as the engine's dedup groups them). A
    copy pairs with its representative at similarity 1 and is dropped: it takes the fate of
    its representative, which the keep rule visits before it."""
    shingled = signed.filter(F.col("exact").isNotNull())
    groups = shingled.groupBy("exact").agg(
        F.count(F.lit(1)).alias("members"),
        *([keep.best(F.col("v")).alias("best")] if keep.ranked else []),
    )
    candidates = shingled.join(groups.filter(F.col("members") > 1), "exact")
    if keep.ranked:
        candidates = candidates.filter(F.col("v").eqNullSafe(F.col("best")))
    first = F.max("node") if keep.name == "last" else F.min("node")
    reps = candidates.groupBy("exact").agg(first.alias("rep"))
    return (
        shingled.join(reps, "exact")
        .filter(F.col("node") != F.col("rep"))
        .select(F.col("node").alias("copy"), "rep")
    )


def _oriented(pairs: DataFrame, signed: DataFrame, keep: _KeepOrder) -> DataFrame:
    """``pairs (a, b)`` as ``(a, b)`` with ``a`` the one the keep order visits first."""
    if keep.name == "first":
        return pairs.select("a", "b")
    if keep.ranked:
        values = signed.select("node", "v")
        pairs = pairs.join(values.toDF("a", "a_v"), "a").join(values.toDF("b", "b_v"), "b")
    first = keep.earlier("a", "b")
    return pairs.select(
        F.when(first, F.col("a")).otherwise(F.col("b")).alias("a"),
        F.when(first, F.col("b")).otherwise(F.col("a")).alias("b"),
    )


def _components(edges: DataFrame, max_rounds: int) -> tuple[DataFrame, int]:
    """Connected components by alternating large-star and small-star (Kiveris et al., SoCC
    2014) on ``edges (v, m)`` with ``m < v``. Returns ``(v, m)`` for every node ``v`` that is
    not the smallest of its component, ``m`` being that smallest node, and the rounds run.
    Each round costs two counts on the driver."""
    e = edges  # distinct, and checkpointed by the caller
    for rounds in range(1, max_rounds + 1):
        # Large-star: every neighbour larger than u links to the smallest of u's closed
        # neighbourhood.
        both = e.select(F.col("v").alias("u"), F.col("m").alias("w")).union(
            e.select(F.col("m").alias("u"), F.col("v").alias("w"))
        )
        low = both.groupBy("u").agg(F.min("w").alias("lw"))
        e = (
            both.join(low, "u")
            .filter(F.col("w") > F.col("u"))
            .select(F.col("w").alias("v"), F.least(F.col("lw"), F.col("u")).alias("m"))
            .distinct()
        )
        # Small-star: u and its smaller neighbours link to the smallest of them.
        low = e.groupBy("v").agg(F.min("m").alias("mm"))
        e = _checkpoint(
            e.join(low, "v")
            .select(F.col("m").alias("v"), F.col("mm").alias("m"))
            .filter(F.col("v") != F.col("m"))
            .union(low.select("v", F.col("mm").alias("m")))
            .distinct()
        )
        # Done when the edges are disjoint stars: one parent per node, no parent has a parent.
        counts = e.agg(F.count(F.lit(1)).alias("edges"), F.countDistinct("v").alias("children"))
        row = counts.first()
        if row is None or row["edges"] == row["children"]:
            chained = e.join(e.select(F.col("v").alias("m")), "m").limit(1).count()
            if chained == 0:
                return e, rounds
    raise RuntimeError(f"connected components did not converge in {max_rounds} rounds")


_UNDECIDED, _KEPT, _DROPPED = 0, 1, 2


def _greedy_keep(pairs: DataFrame, max_rounds: int) -> tuple[DataFrame, int]:
    """``(n, st)`` for every node with a pair: kept or dropped by the engine's greedy rule.

    Visiting documents in order, the engine keeps one that is still unassigned and has an
    unassigned neighbour, and assigns (drops) those neighbours. Hence a document is dropped
    exactly when a smaller neighbour is kept: the kept set is the lexicographically first
    maximal independent set. A round decides every undecided node whose smaller neighbours
    settle it (one kept: dropped; all dropped: kept); the smallest undecided node is always
    settled, and in practice a round settles a whole layer of every cluster."""
    lower = pairs.select(
        F.col("b").alias("n"), F.col("a").alias("s")
    )  # s is a smaller neighbour of n
    nodes = (
        pairs.select(F.col("a").alias("n")).union(pairs.select(F.col("b").alias("n"))).distinct()
    )
    has_lower = lower.select("n").distinct().withColumn("lower", F.lit(True))
    status = _checkpoint(
        nodes.join(has_lower, "n", "left").select(
            "n",
            F.when(F.col("lower").isNull(), F.lit(_KEPT)).otherwise(F.lit(_UNDECIDED)).alias("st"),
        )
    )
    for rounds in range(1, max_rounds + 1):
        undecided = status.filter(F.col("st") == _UNDECIDED).select("n")
        if undecided.limit(1).count() == 0:
            return status, rounds - 1
        votes = (
            lower.join(undecided, "n")
            .join(status.select(F.col("n").alias("s"), F.col("st").alias("sst")), "s")
            .groupBy("n")
            .agg(
                F.max((F.col("sst") == _KEPT).cast("int")).alias("any_kept"),
                F.min((F.col("sst") == _DROPPED).cast("int")).alias("all_dropped"),
            )
            .select(
                "n",
                F.when(F.col("any_kept") == 1, F.lit(_DROPPED))
                .when(F.col("all_dropped") == 1, F.lit(_KEPT))
                .otherwise(F.lit(_UNDECIDED))
                .alias("new"),
            )
        )
        status = _checkpoint(
            status.join(votes, "n", "left").select(
                "n", F.coalesce(F.col("new"), F.col("st")).alias("st")
            )
        )
    raise RuntimeError(f"keep rule did not settle in {max_rounds} rounds")
