"""Indexes of token lists from Python (``shingle="tokens"`` / ``"tokens:N"``): insert_tokens,
query_tokens and insert_arrow(tokens=...) store what MinHasher(shingle="tokens").sketch_tokens
signs, refuse texts (and the reverse) with the library's message, and answer as the command-line
tool answers the same index."""

from __future__ import annotations

import json
import pathlib
import subprocess
from typing import Any

import numpy as np
import pytest

import mhdb
from conftest import import_or_skip

# Groups of 3 near-duplicate lists (one token changed in each); groups share no token.
ROWS: list[tuple[str, list[Any]]] = []
for i in range(12):
    tokens: list[Any] = [f"g{i // 3}t{t}" for t in range(40)] + list(
        range(1000 * (i // 3), 1000 * (i // 3) + 20)
    )
    tokens[(i % 3) * 5] = f"changed{i}"
    ROWS.append((f"doc{i}", tokens))


def full_index(path: pathlib.Path, shingle: str = "tokens", **params: Any) -> mhdb.Index:
    """An index of token lists storing whole 64-bit slots, so that a stored signature is the
    signature itself."""
    return mhdb.Index.create(
        path, 0.5, shingle=shingle, num_perm=128, bits=64, band_slots=128, **params
    )


def test_insert_tokens_and_query_tokens(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path, shingle="tokens") as idx:
        params = idx.params
        assert params["shingle"] == "tokens"
        assert (params["nfkc"], params["lowercase"], params["collapse_whitespace"]) == (
            False,
            False,
            False,
        )
        for key, tokens in ROWS:
            idx.insert_tokens(key, tokens)
        assert len(idx) == len(ROWS)
        # Order and repeats do not matter at width 1.
        answer = idx.query_tokens(list(reversed(ROWS[0][1])) + ROWS[0][1][:3])
        assert answer[0] == ("doc0", 1.0)
        assert {k for k, _ in answer} == {"doc0", "doc1", "doc2"}
        assert idx.query_tokens(["nothing", "like", "it"]) == []


def test_query_tokens_takes_the_options_of_query(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path, shingle="tokens", store_sets=True) as idx:
        for key, tokens in ROWS:
            idx.insert_tokens(key, tokens)
        query = ROWS[3][1]
        every = idx.query_tokens(query, threshold=0.5)
        assert every[0] == ("doc3", 1.0)
        assert sorted(k for k, _ in every) == ["doc3", "doc4", "doc5"]
        # As query answers the same signature.
        assert every == idx.query(signature=idx.hasher.sketch_tokens(query), threshold=0.5)
        assert idx.query_tokens(query, threshold=0.5, limit=1) == every[:1]
        top = idx.query_tokens(query, top=2)
        assert len(top) == 2 and top[0] == ("doc3", 1.0) and top[1][0] in ("doc4", "doc5")
        estimates = idx.query_tokens(query, 0.5, None, False)
        assert sorted(k for k, _ in estimates) == sorted(k for k, _ in every)
        with pytest.raises(mhdb.InvalidParameterError, match="limit"):
            idx.query_tokens(query, limit=0)
        with pytest.raises(mhdb.InvalidParameterError):
            idx.query_tokens(query, threshold=1.5)


def test_integer_and_string_tokens_differ(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path, shingle="tokens") as idx:
        idx.insert_tokens("ints", [1, 2, 3, 4, 5])
        idx.insert_tokens("strs", ["1", "2", "3", "4", "5"])
        assert idx.query_tokens([5, 4, 3, 2, 1]) == [("ints", 1.0)]
        assert idx.query_tokens(np.array([1, 2, 3, 4, 5], dtype=np.int64)) == [("ints", 1.0)]
        assert idx.query_tokens(["5", "4", "3", "2", "1"]) == [("strs", 1.0)]
        with pytest.raises(TypeError):
            idx.insert_tokens("bad", [1.5])
        with pytest.raises(TypeError):
            idx.insert_tokens("bad", "a string is not a token list")
        with pytest.raises(mhdb.InvalidParameterError, match="empty"):
            idx.insert_tokens("empty", [])
        assert "bad" not in idx and "empty" not in idx


def test_width_two_takes_runs_of_two_tokens(tmp_index_path: pathlib.Path) -> None:
    with full_index(tmp_index_path, shingle="tokens:2") as idx:
        assert idx.params["shingle"] == "tokens:2"
        abc = [f"t{i}" for i in range(30)]
        idx.insert_tokens("abc", abc)
        assert idx.query_tokens(abc) == [("abc", 1.0)]
        assert idx.query_tokens(list(reversed(abc))) == []
        stored = idx.get("abc")
        assert stored is not None
        np.testing.assert_array_equal(stored, idx.hasher.sketch_tokens(abc))
        np.testing.assert_array_equal(
            stored, mhdb.MinHasher(num_perm=128, shingle="tokens:2").sketch_tokens(abc)
        )
        np.testing.assert_array_equal(
            stored, mhdb.MinHasher(num_perm=128).sketch_tokens(abc, width=2)
        )


def test_a_token_hasher_signs_as_a_token_index_stores(tmp_path: pathlib.Path) -> None:
    hasher = mhdb.MinHasher(num_perm=128, shingle="tokens")
    assert hasher.shingle == "tokens"
    assert (hasher.nfkc, hasher.lowercase, hasher.collapse_whitespace) == (False, False, False)
    with full_index(tmp_path / "idx") as idx:
        for key, tokens in ROWS:
            idx.insert_tokens(key, tokens)
        many = hasher.sketch_tokens_many([t for _, t in ROWS])
        for row, (key, tokens) in enumerate(ROWS):
            stored = idx.get(key)
            assert stored is not None
            np.testing.assert_array_equal(stored, hasher.sketch_tokens(tokens))
            np.testing.assert_array_equal(stored, many[row])
            np.testing.assert_array_equal(stored, idx.hasher.sketch_tokens(tokens))
        # A stored signature queried as a signature finds its document.
        assert idx.query(signature=hasher.sketch_tokens(ROWS[0][1]))[0] == ("doc0", 1.0)
    # The same tokens through a text hasher at width 1 sign alike: tokens take no
    # normalization whatever the hasher's flags.
    np.testing.assert_array_equal(
        mhdb.MinHasher(num_perm=128).sketch_tokens(ROWS[0][1]), hasher.sketch_tokens(ROWS[0][1])
    )


def test_token_schemes_refuse_normalization(tmp_path: pathlib.Path) -> None:
    for flag in ("nfkc", "lowercase", "collapse_whitespace"):
        with pytest.raises(mhdb.InvalidParameterError, match="takes tokens as given"):
            mhdb.MinHasher(shingle="tokens", **{flag: True})
        with pytest.raises(mhdb.InvalidParameterError, match="takes tokens as given"):
            mhdb.Index.create(tmp_path / flag, shingle="tokens", **{flag: True})
    # Saying "none" explicitly is what the scheme takes.
    hasher = mhdb.MinHasher(shingle="tokens:3", lowercase=False, collapse_whitespace=False)
    assert hasher.shingle == "tokens:3"
    with pytest.raises(mhdb.InvalidParameterError, match="width=2"):
        hasher.sketch_tokens(["a", "b", "c"], width=2)
    np.testing.assert_array_equal(
        hasher.sketch_tokens(["a", "b", "c"], width=3), hasher.sketch_tokens(["a", "b", "c"])
    )
    # The text schemes keep their defaults.
    text = mhdb.MinHasher()
    assert (text.nfkc, text.lowercase, text.collapse_whitespace) == (False, True, True)


def test_texts_and_token_lists_do_not_mix(tmp_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_path / "tokens", shingle="tokens") as idx:
        idx.insert_tokens("k", ["a", "b"])
        with pytest.raises(mhdb.ParameterMismatchError, match="an index of token lists"):
            idx.insert("t", "a b")
        with pytest.raises(mhdb.ParameterMismatchError, match="query_tokens"):
            idx.query("a b")
        with pytest.raises(mhdb.ParameterMismatchError, match="an index of token lists"):
            idx.insert_many([("t", "a b")])
        assert list(idx.keys()) == ["k"]
    with mhdb.Index.create(tmp_path / "texts") as idx:
        with pytest.raises(mhdb.ParameterMismatchError, match="token list"):
            idx.insert_tokens("k", ["a", "b"])
        with pytest.raises(mhdb.ParameterMismatchError, match="token list"):
            idx.query_tokens(["a", "b"])
        assert len(idx) == 0


def test_a_keyed_index_of_token_lists(tmp_path: pathlib.Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_bytes(bytes(range(32)))
    path = tmp_path / "idx"
    with mhdb.Index.create(
        path, shingle="tokens", key_file=key_file, store_sets=True, num_perm=128, bits=64
    ) as idx:
        for key, tokens in ROWS:
            idx.insert_tokens(key, tokens)
        stored = idx.get("doc0")
        assert stored is not None
        np.testing.assert_array_equal(stored, idx.hasher.sketch_tokens(ROWS[0][1]))
        # Keyed: not what the unkeyed hasher signs.
        unkeyed = mhdb.MinHasher(num_perm=128, shingle="tokens").sketch_tokens(ROWS[0][1])
        assert not np.array_equal(stored, unkeyed)
    with mhdb.Index.open(path, key_file=key_file) as idx:
        assert idx.query_tokens(ROWS[0][1])[0] == ("doc0", 1.0)
    with mhdb.Index.open(path, read_only=True) as idx:
        with pytest.raises(mhdb.Error, match="key"):
            idx.query_tokens(ROWS[0][1])


def same_as_insert_tokens(idx: mhdb.Index, tmp_path: pathlib.Path, rows: list[Any]) -> None:
    """`idx` holds what insert_tokens of the same rows stores."""
    with full_index(tmp_path / "by-insert-tokens") as ref:
        for key, tokens in rows:
            ref.insert_tokens(key, tokens)
        assert sorted(idx.keys()) == sorted(ref.keys())
        for key in ref.keys():
            stored, expected = idx.get(key), ref.get(key)
            assert stored is not None and expected is not None
            np.testing.assert_array_equal(stored, expected)


STRING_ROWS = [(k, [t for t in tokens if isinstance(t, str)]) for k, tokens in ROWS]
INT_ROWS = [(k, [t for t in tokens if isinstance(t, int)]) for k, tokens in ROWS]


def test_insert_arrow_reads_pyarrow_list_columns(tmp_path: pathlib.Path) -> None:
    pa = import_or_skip("pyarrow")
    table = pa.table(
        {
            "id": [k for k, _ in ROWS],
            "strings": [t for _, t in STRING_ROWS],
            "ints": pa.array([t for _, t in INT_ROWS], type=pa.list_(pa.int64())),
        }
    )
    for column, rows in (("strings", STRING_ROWS), ("ints", INT_ROWS)):
        with full_index(tmp_path / column) as idx:
            commits: list[int] = []
            n = idx.insert_arrow(
                table, id="id", tokens=column, commit_every=5, on_commit=commits.append
            )
            assert n == len(ROWS) and commits == [5, 10, 12]
            same_as_insert_tokens(idx, tmp_path / f"ref-{column}", rows)
    # novel_only: the near-duplicates of each group are not stored.
    with mhdb.Index.create(tmp_path / "novel", 0.5, shingle="tokens") as idx:
        dups = idx.insert_arrow(table, id="id", tokens="strings", novel_only=True)
        assert [k for k, _ in dups] == [k for i, (k, _) in enumerate(ROWS) if i % 3]
        assert sorted(idx.keys()) == [k for i, (k, _) in enumerate(ROWS) if i % 3 == 0]


def test_insert_arrow_reads_polars_list_columns(tmp_path: pathlib.Path) -> None:
    pl = import_or_skip("polars")
    frame = pl.DataFrame(
        {"id": [k for k, _ in ROWS], "t": [t for _, t in STRING_ROWS]},
    )
    with full_index(tmp_path / "idx") as idx:
        assert idx.insert_arrow(frame, id="id", tokens="t") == len(ROWS)
        same_as_insert_tokens(idx, tmp_path, STRING_ROWS)


def test_insert_arrow_refusals(tmp_path: pathlib.Path) -> None:
    pa = import_or_skip("pyarrow")
    table = pa.table({"id": ["a"], "t": [["x", "y"]], "text": ["x y"]})
    with mhdb.Index.create(tmp_path / "tokens", shingle="tokens") as idx:
        with pytest.raises(mhdb.InvalidParameterError, match="exactly one of text= and tokens="):
            idx.insert_arrow(table, id="id")
        with pytest.raises(mhdb.InvalidParameterError, match="exactly one of text= and tokens="):
            idx.insert_arrow(table, id="id", text="text", tokens="t")
        with pytest.raises(mhdb.InvalidParameterError, match="list"):
            idx.insert_arrow(table, id="id", tokens="text")
        with pytest.raises(mhdb.ParameterMismatchError, match="an index of token lists"):
            idx.insert_arrow(table, id="id", text="text")
        assert len(idx) == 0
    with mhdb.Index.create(tmp_path / "texts") as idx:
        with pytest.raises(mhdb.ParameterMismatchError, match="token list"):
            idx.insert_arrow(table, id="id", tokens="t")
        assert len(idx) == 0


def cli_run(cli: pathlib.Path, *args: object) -> str:
    done = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def cli_answers(cli: pathlib.Path, idx: pathlib.Path, tmp: pathlib.Path) -> list[Any]:
    queries = tmp / "queries.jsonl"
    queries.write_text("".join(json.dumps({"id": k, "tokens": t}) + "\n" for k, t in ROWS))
    lines = cli_run(cli, "query", idx, "--jsonl", queries).splitlines()
    return [[(m["id"], m["jaccard"]) for m in json.loads(line)["matches"]] for line in lines]


def rounded(answers: list[Any]) -> list[Any]:
    return [[(k, round(j, 6)) for k, j in a] for a in answers]


def test_the_cli_and_python_answer_alike(cli: pathlib.Path, tmp_path: pathlib.Path) -> None:
    # Built by `mhdb add --tokens-field`, queried from Python.
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": k, "t": t}) + "\n" for k, t in ROWS))
    by_cli = tmp_path / "by-cli"
    cli_run(cli, "create", by_cli, "--shingle", "tokens", "--threshold", "0.5")
    cli_run(cli, "add", by_cli, corpus, "--tokens-field", "t")
    with mhdb.Index.open(by_cli, read_only=True) as idx:
        py_answers = rounded([idx.query_tokens(t) for _, t in ROWS])
    assert all(a and a[0][0] == k for a, (k, _) in zip(py_answers, ROWS))
    assert rounded(cli_answers(cli, by_cli, tmp_path)) == py_answers
    # Built from Python, queried by the CLI, with the same answers.
    by_py = tmp_path / "by-py"
    with mhdb.Index.create(by_py, 0.5, shingle="tokens") as idx:
        for key, tokens in ROWS:
            idx.insert_tokens(key, tokens)
    assert rounded(cli_answers(cli, by_py, tmp_path)) == py_answers
    cli_run(cli, "verify", by_py)
