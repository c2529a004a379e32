"""Index.insert_arrow: documents from Arrow tables and streams (pyarrow, Polars), read by the
core's column rules, loaded as insert_many loads its items."""

from __future__ import annotations

import pathlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import mhdb
from conftest import import_or_skip


def text(i: int) -> str:
    """Documents 3k, 3k+1 and 3k+2 are near-duplicates of each other; groups share nothing."""
    words = [f"g{i // 3}w{w}" for w in range(60)]
    words[(i % 3) * 7] = f"changed{i}"
    return " ".join(words)


KEYS = [f"doc{i}" for i in range(30)]
TEXTS = [text(i) for i in range(30)]


def same_as_insert_many(idx: mhdb.Index, tmp_path: pathlib.Path, keys: list[Any]) -> None:
    """`idx` holds what insert_many of the same rows stores: keys, signatures and answers."""
    with mhdb.Index.create(tmp_path / "by-insert-many", shingle="word:2") as ref:
        assert ref.insert_many(zip([str(k) for k in keys], TEXTS)) == len(keys)
        assert sorted(map(str, idx.keys())) == sorted(map(str, ref.keys()))
        for key in ref.keys():
            stored, expected = idx.get(key), ref.get(key)
            assert stored is not None and expected is not None
            np.testing.assert_array_equal(stored, expected)
        for t in TEXTS[::4]:
            assert idx.query(t) == ref.query(t)


def test_a_pyarrow_table_stores_what_insert_many_stores(tmp_path: pathlib.Path) -> None:
    pa = import_or_skip("pyarrow")
    table = pa.table({"id": KEYS, "text": TEXTS, "other": list(range(30))})
    with mhdb.Index.create(tmp_path / "idx", shingle="word:2") as idx:
        commits: list[int] = []
        n = idx.insert_arrow(table, id="id", text="text", commit_every=7, on_commit=commits.append)
        assert n == 30 and commits == [7, 14, 21, 28, 30]
        same_as_insert_many(idx, tmp_path, KEYS)
        # The same rows again replace the documents, as insert_many does.
        assert idx.insert_arrow(table, id="id", text="text") == 30 and len(idx) == 30


def test_a_record_batch_reader_is_read_batch_by_batch(tmp_path: pathlib.Path) -> None:
    pa = import_or_skip("pyarrow")
    schema = pa.schema([("key", pa.string()), ("body", pa.string())])

    def batches() -> Iterator[Any]:
        for start in range(0, 30, 4):  # batches of 4 rows, the last of 2; and an empty one
            yield pa.record_batch([KEYS[start : start + 4], TEXTS[start : start + 4]], schema)
        yield pa.record_batch([[], []], schema)

    reader = pa.RecordBatchReader.from_batches(schema, batches())
    with mhdb.Index.create(tmp_path / "idx", shingle="word:2") as idx:
        assert idx.insert_arrow(reader, id="key", text="body", commit_every=5) == 30
        same_as_insert_many(idx, tmp_path, KEYS)


def test_large_strings_and_integer_ids(tmp_path: pathlib.Path) -> None:
    pa = import_or_skip("pyarrow")
    ids = list(range(100, 130))
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "text": pa.array(TEXTS, pa.large_string()),
        }
    )
    with mhdb.Index.create(tmp_path / "idx", shingle="word:2") as idx:
        assert idx.insert_arrow(table, id="id", text="text") == 30
        # An integer id is its decimal digits, as in mhdb add.
        assert "117" in idx and 117 not in idx
        same_as_insert_many(idx, tmp_path, ids)
    large_ids = pa.table(
        {"id": pa.array(KEYS, pa.large_string()), "text": pa.array(TEXTS, pa.large_string())}
    )
    with mhdb.Index.create(tmp_path / "idx2", shingle="word:2") as idx:
        assert idx.insert_arrow(large_ids, id="id", text="text") == 30
        same_as_insert_many(idx, tmp_path / "2", KEYS)


def test_a_polars_data_frame(tmp_path: pathlib.Path) -> None:
    pl = import_or_skip("polars")
    frame = pl.DataFrame({"id": KEYS, "text": TEXTS})
    with mhdb.Index.create(tmp_path / "idx", shingle="word:2") as idx:
        assert idx.insert_arrow(frame, id="id", text="text") == 30
        same_as_insert_many(idx, tmp_path, KEYS)
    numbered = pl.DataFrame({"n": list(range(30)), "text": TEXTS})
    with mhdb.Index.create(tmp_path / "idx2", shingle="word:2") as idx:
        assert idx.insert_arrow(numbered, id="n", text="text") == 30
        assert sorted(idx.keys(), key=int) == [str(i) for i in range(30)]


def test_a_struct_field_by_dotted_path(tmp_path: pathlib.Path) -> None:
    pa = import_or_skip("pyarrow")
    meta = pa.array([{"url": k} for k in KEYS])
    table = pa.table({"meta": meta, "text": TEXTS})
    with mhdb.Index.create(tmp_path / "idx", shingle="word:2") as idx:
        assert idx.insert_arrow(table, id="meta.url", text="text") == 30
        same_as_insert_many(idx, tmp_path, KEYS)


def test_novel_only_returns_the_rows_not_stored(tmp_path: pathlib.Path) -> None:
    pa = import_or_skip("pyarrow")
    table = pa.table({"id": KEYS[:6], "text": TEXTS[:6]})
    with mhdb.Index.create(tmp_path / "idx", shingle="word:2") as idx:
        skipped = idx.insert_arrow(table, id="id", text="text", novel_only=True, threshold=0.7)
        assert [(key, [k for k, _ in matches]) for key, matches in skipped] == [
            ("doc1", ["doc0"]),
            ("doc2", ["doc0"]),
            ("doc4", ["doc3"]),
            ("doc5", ["doc3"]),
        ]
        assert sorted(idx.keys()) == ["doc0", "doc3"]
        with pytest.raises(mhdb.InvalidParameterError, match="novel_only"):
            idx.insert_arrow(table, id="id", text="text", threshold=0.5)


@pytest.mark.parametrize(
    ("column", "message"),
    [("id", 'row 12: column "id" is null'), ("text", 'row 12: column "text" is null')],
)
def test_a_null_names_its_row_and_column(
    tmp_path: pathlib.Path, column: str, message: str
) -> None:
    pa = import_or_skip("pyarrow")
    columns: dict[str, list[Any]] = {"id": list(KEYS), "text": list(TEXTS)}
    columns[column][12] = None
    table = pa.table(columns)
    with mhdb.Index.create(tmp_path / "idx", shingle="word:2") as idx:
        with pytest.raises(mhdb.InvalidParameterError, match=message) as raised:
            idx.insert_arrow(table, id="id", text="text", commit_every=10)
        assert raised.value.parameter == "data"
        # The batches before the bad row's are committed; its batch and the rest are not.
        assert sorted(idx.keys()) == sorted(KEYS[:10])


def test_a_missing_column_names_the_columns_there_are(tmp_path: pathlib.Path) -> None:
    pa = import_or_skip("pyarrow")
    table = pa.table({"id": KEYS, "content": TEXTS})
    with mhdb.Index.create(tmp_path / "idx") as idx:
        with pytest.raises(
            mhdb.InvalidParameterError, match='no column "text" \\(its columns: id, content\\)'
        ):
            idx.insert_arrow(table, id="id", text="text")
        assert len(idx) == 0


@pytest.mark.parametrize(
    ("id_type", "text_type", "message"),
    [
        ("float64", "string", 'column "id" is of type Float64; an id column must hold strings'),
        ("string", "int64", 'column "text" is of type Int64; a text column must hold strings'),
    ],
)
def test_a_column_of_the_wrong_type_is_refused(
    tmp_path: pathlib.Path, id_type: str, text_type: str, message: str
) -> None:
    pa = import_or_skip("pyarrow")
    ids = [float(i) for i in range(3)] if id_type == "float64" else KEYS[:3]
    texts = list(range(3)) if text_type == "int64" else TEXTS[:3]
    table = pa.table({"id": pa.array(ids, id_type), "text": pa.array(texts, text_type)})
    with mhdb.Index.create(tmp_path / "idx") as idx:
        with pytest.raises(mhdb.InvalidParameterError, match=message):
            idx.insert_arrow(table, id="id", text="text")
        assert len(idx) == 0


def test_a_text_without_shingles_names_its_row_and_key(tmp_path: pathlib.Path) -> None:
    pa = import_or_skip("pyarrow")
    table = pa.table({"id": ["a", "b"], "text": [TEXTS[0], "   "]})
    with mhdb.Index.create(tmp_path / "idx") as idx:
        with pytest.raises(mhdb.InvalidParameterError, match='row 1 \\(key "b"\\): .*no shingles'):
            idx.insert_arrow(table, id="id", text="text")


def test_a_failing_stream_keeps_the_batches_committed_before(tmp_path: pathlib.Path) -> None:
    pa = import_or_skip("pyarrow")
    schema = pa.schema([("id", pa.string()), ("text", pa.string())])

    def batches() -> Iterator[Any]:
        yield pa.record_batch([KEYS[:10], TEXTS[:10]], schema)
        raise RuntimeError("the producer broke")

    reader = pa.RecordBatchReader.from_batches(schema, batches())
    with mhdb.Index.create(tmp_path / "idx", shingle="word:2") as idx:
        with pytest.raises(mhdb.Error, match="the producer broke"):
            idx.insert_arrow(reader, id="id", text="text", commit_every=5)
        assert sorted(idx.keys()) == sorted(KEYS[:10])


def test_data_without_an_arrow_stream_is_a_type_error(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path) as idx:
        with pytest.raises(TypeError, match="Arrow C stream interface"):
            idx.insert_arrow([("a", "text")], id="id", text="text")


def progress_during(call: Callable[[], object]) -> int:
    """How often a second thread counted during `call`, with the switch interval so long that
    the interpreter never takes the GIL from a thread holding it (as test_gil.py measures):
    the count moves only while `call` releases the GIL."""
    count, stop = [0], threading.Event()

    def count_forever() -> None:
        while not stop.is_set():
            count[0] += 1
            time.sleep(0.001)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    thread = threading.Thread(target=count_forever, daemon=True)
    thread.start()
    try:
        time.sleep(0.01)  # (releases the GIL: the counter starts)
        before = count[0]
        call()
        return count[0] - before
    finally:
        stop.set()
        sys.setswitchinterval(old)
        thread.join()


def test_insert_arrow_releases_the_gil(tmp_path: pathlib.Path) -> None:
    pa = import_or_skip("pyarrow")
    words = [f"word{i}" for i in range(5000)]
    texts = [" ".join(words[(i * 7919 + j * 31) % 5000] for j in range(300)) for i in range(4000)]
    table = pa.table({"id": [f"d{i}" for i in range(4000)], "text": texts})

    def hold_the_gil() -> None:
        assert sum(i * i for i in range(3_000_000))

    with mhdb.Index.create(tmp_path / "idx") as idx:
        assert progress_during(hold_the_gil) == 0  # the control
        assert progress_during(lambda: idx.insert_arrow(table, id="id", text="text")) > 0
        assert len(idx) == 4000
