"""`Index.dedup_table()`: the decision `mhdb dedup --apply --annotate` writes, as a pyarrow
Table with one row per stored document."""

from __future__ import annotations

import json
import pathlib
import random
import subprocess
from typing import Any

import pytest

import mhdb
from conftest import import_or_skip

pa = import_or_skip("pyarrow")

VOCAB = [f"w{n}" for n in range(3000)]


def corpus() -> list[dict[str, str]]:
    """60 pages of 60 random words, each with up to four copies that change a few words (so
    clusters of near-duplicates at several similarities), and 40 pages alone."""
    rng = random.Random(7)
    docs = []
    for page in range(100):
        words = [rng.choice(VOCAB) for _ in range(60)]
        docs.append({"id": f"d{page}", "text": " ".join(words)})
        for copy in range(rng.randrange(5) if page < 60 else 0):
            changed = list(words)
            for _ in range(rng.randrange(1, 10)):
                changed[rng.randrange(60)] = rng.choice(VOCAB)
            docs.append({"id": f"d{page}-c{copy}", "text": " ".join(changed)})
    rng.shuffle(docs)
    return docs


Row = tuple[Any, bool, Any, Any]


def cli_annotated(
    cli: pathlib.Path, idx: pathlib.Path, data: pathlib.Path, out: pathlib.Path, *flags: str
) -> dict[str, Row]:
    """`mhdb dedup IDX --apply DATA --annotate`: each row's (cluster, keep, best_match,
    similarity), by id."""
    done = subprocess.run(
        [str(cli), "dedup", str(idx), "--apply", str(data), "--out", str(out), "--annotate"]
        + list(flags),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    rows = map(json.loads, (out / data.name).read_text().splitlines())
    return {r["id"]: (r["cluster"], r["keep"], r["best_match"], r["similarity"]) for r in rows}


def table_rows(table: Any) -> dict[str, Row]:
    rows = table.to_pylist()
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    return {r["id"]: (r["cluster"], r["keep"], r["best_match"], r["similarity"]) for r in rows}


@pytest.fixture
def built(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """An index of `corpus()` and the JSON Lines file it was loaded from."""
    data = tmp_path / "data.jsonl"
    docs = corpus()
    data.write_text("".join(json.dumps(d) + "\n" for d in docs))
    idx = tmp_path / "idx"
    with mhdb.Index.create(idx, 0.8) as index:
        index.insert_many(((d["id"], d["text"]) for d in docs), commit_every=50)
    return idx, data


@pytest.mark.parametrize("keep", ["first", "last", "longest", "shortest"])
def test_equals_the_cli_annotation(
    cli: pathlib.Path, built: tuple[pathlib.Path, pathlib.Path], tmp_path: pathlib.Path, keep: str
) -> None:
    idx, data = built
    with mhdb.Index.open(idx, read_only=True) as index:
        table = index.dedup_table(keep=keep)
        assert len(table) == len(index)
    assert table.schema == pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("cluster", pa.string(), nullable=False),
            pa.field("keep", pa.bool_(), nullable=False),
            pa.field("best_match", pa.string()),
            pa.field("similarity", pa.float64()),
        ]
    )
    got = table_rows(table)
    want = cli_annotated(cli, idx, data, tmp_path / "out", "--keep", keep)
    assert got == want
    dropped = [r for r in got.values() if not r[1]]
    assert dropped and all(r[2] is not None and r[3] >= 0.8 for r in dropped)
    assert all(got[r[0]][1] for r in got.values()), "every cluster is a kept document"


def test_keep_last_keeps_other_copies_than_first(
    built: tuple[pathlib.Path, pathlib.Path],
) -> None:
    with mhdb.Index.open(built[0], read_only=True) as index:
        first = table_rows(index.dedup_table())
        last = table_rows(index.dedup_table(keep="last"))
    assert {k for k, r in first.items() if r[1]} != {k for k, r in last.items() if r[1]}


def test_keep_longest_and_shortest_rank_by_distinct_words(tmp_index_path: pathlib.Path) -> None:
    """Longest keeps the copy with the most distinct shingles (a text repeated three times is
    no longer than once, plus the seam); shortest the fewest; ties to the earlier insert."""
    base = "the annual report of the society covers every meeting held this year"
    docs = {"short": base, "long": base + " and its accounts", "padded": " ".join([base] * 3)}
    with mhdb.Index.create(tmp_index_path, threshold=0.5, shingle="word:2") as index:
        for key, text in docs.items():
            index.insert(key, text)
        kept = {
            keep: {r["id"] for r in index.dedup_table(keep=keep).to_pylist() if r["keep"]}
            for keep in ["longest", "shortest"]
        }
    assert kept == {"longest": {"long"}, "shortest": {"short"}}


def test_a_threshold_override_is_the_cli_threshold(
    cli: pathlib.Path, built: tuple[pathlib.Path, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    idx, data = built
    with mhdb.Index.open(idx, read_only=True) as index:
        at_default = table_rows(index.dedup_table())
        lower = table_rows(index.dedup_table(threshold=0.6))
    assert lower == cli_annotated(cli, idx, data, tmp_path / "out", "--threshold", "0.6")
    kept = sum(r[1] for r in lower.values())
    assert kept < sum(r[1] for r in at_default.values())


def test_an_empty_index_gives_an_empty_table(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path) as index:
        table = index.dedup_table()
    assert table.num_rows == 0
    assert table.column_names == ["id", "cluster", "keep", "best_match", "similarity"]
    assert table.schema.field("id").type == pa.string()


def test_keys_that_are_not_utf8_make_binary_columns(tmp_index_path: pathlib.Path) -> None:
    text = " ".join(VOCAB[:80])
    with mhdb.Index.create(tmp_index_path) as index:
        index.insert(b"\xff-old", text)
        index.insert("new", text)
        table = index.dedup_table()
    assert table.schema.field("id").type == pa.binary()
    assert table.to_pylist() == [
        {
            "id": b"new",
            "cluster": b"\xff-old",
            "keep": False,
            "best_match": b"\xff-old",
            "similarity": 1.0,
        },
        {
            "id": b"\xff-old",
            "cluster": b"\xff-old",
            "keep": True,
            "best_match": None,
            "similarity": None,
        },
    ]


def test_a_bad_keep_value_is_refused_by_name(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path) as index:
        with pytest.raises(ValueError, match='"biggest"') as caught:
            index.dedup_table(keep="biggest")  # type: ignore[arg-type]
    assert isinstance(caught.value, mhdb.InvalidParameterError)
    assert caught.value.parameter == "keep"


def test_keep_max_and_min_rank_by_the_field_the_cli_captured(
    cli: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """An index built by `mhdb add --keep-field q`: max:q keeps each group's highest value,
    min:q its lowest, documents without one last; the table equals the CLI's annotation."""
    base = "the annual report of the society covers every meeting held this year"
    docs = [
        {"id": "a", "text": base, "q": 2},
        {"id": "b", "text": base + " again", "q": 9.5},
        {"id": "c", "text": base + " once more"},
        {"id": "d", "text": base + " and later", "q": -4},
        {"id": "e", "text": "something else entirely, alone in its cluster", "q": 100},
    ]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in docs))
    idx = tmp_path / "idx"
    for args in (
        ["create", str(idx), "--threshold", "0.5"],
        ["add", str(idx), str(data), "--keep-field", "q"],
    ):
        done = subprocess.run([str(cli), *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    with mhdb.Index.open(idx, read_only=True) as index:
        tables = {keep: table_rows(index.dedup_table(keep=keep)) for keep in ["max:q", "min:q"]}
        with pytest.raises(mhdb.InvalidParameterError, match='"q"'):
            index.dedup_table(keep="max:other")
    kept = {keep: {k for k, r in rows.items() if r[1]} for keep, rows in tables.items()}
    assert kept == {"max:q": {"b", "e"}, "min:q": {"d", "e"}}
    for keep, rows in tables.items():
        assert rows == cli_annotated(
            cli, idx, data, tmp_path / keep.replace(":", "-"), "--keep", keep
        )


def test_insert_arrow_keep_captures_the_column_dedup_table_ranks_by(
    tmp_index_path: pathlib.Path,
) -> None:
    """`insert_arrow(keep="q")` fixes the index's keep field from the column's type and stores
    each row's value (null: none); `dedup_table(keep="max:q")` keeps the highest."""
    base = "the annual report of the society covers every meeting held this year"
    table = pa.table(
        {
            "id": ["a", "b", "c", "d"],
            "text": [base, base + " again", base + " once more", "alone, unlike the others"],
            "q": pa.array([3, None, 8, 1], pa.int64()),
            "r": [1.0, 2.0, 3.0, 4.0],
        }
    )
    with mhdb.Index.create(tmp_index_path, threshold=0.5) as index:
        index.insert_arrow(table, id="id", text="text", keep="q")
        assert index.stats()["keep"] == {"field": "q", "type": "i64", "with": 3, "without": 1}
        kept = {r["id"] for r in index.dedup_table(keep="max:q").to_pylist() if r["keep"]}
        assert kept == {"c", "d"}
        with pytest.raises(mhdb.InvalidParameterError, match='"q"'):
            index.insert_arrow(table, id="id", text="text", keep="r")
        floats = pa.table({"id": ["e"], "text": [base + "!"], "q": pa.array([float("nan")])})
        with pytest.raises(mhdb.InvalidParameterError, match="NaN"):
            index.insert_arrow(floats, id="id", text="text", keep="q")
