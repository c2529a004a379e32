"""An index built from Python opens in the `mhdb` command-line tool and the reverse, with
equal answers (the CLI prints Jaccard estimates rounded to six decimals)."""

from __future__ import annotations

import json
import pathlib
import subprocess

import mhdb
from conftest import REPO

CORPUS = [json.loads(line) for line in (REPO / "samples" / "corpus.jsonl").read_text().splitlines()]
QUERIES = [d["text"] for d in CORPUS[::9]] + [
    json.loads(line)["text"]
    for line in (REPO / "samples" / "queries.jsonl").read_text().splitlines()
]


def run(cli: pathlib.Path, *args: object) -> str:
    done = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def cli_answers(
    cli: pathlib.Path, idx: pathlib.Path, tmp: pathlib.Path
) -> list[list[tuple[str, float]]]:
    queries = tmp / "queries.jsonl"
    queries.write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(QUERIES))
    )
    lines = run(cli, "query", idx, "--jsonl", queries).splitlines()
    return [[(m["id"], m["jaccard"]) for m in json.loads(line)["matches"]] for line in lines]


def rounded(answers: list[list[tuple[object, float]]]) -> list[list[tuple[object, float]]]:
    return [[(k, round(j, 6)) for k, j in a] for a in answers]


def test_python_built_index_opens_in_the_cli(cli: pathlib.Path, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "py-built"
    with mhdb.Index.create(path, 0.7, num_perm=64, shingle="word:3") as idx:
        idx.insert_many(((d["id"], d["text"]) for d in CORPUS), commit_every=100)
        idx.delete(CORPUS[0]["id"])
        py_answers = rounded([idx.query(q) for q in QUERIES])
        py_pairs = sorted((a, b) for a, b, _ in idx.dedup())
    assert any(py_answers)
    assert cli_answers(cli, path, tmp_path) == py_answers
    stats = json.loads(run(cli, "stats", path, "--json"))
    assert stats["live_docs"] == len(CORPUS) - 1
    cli_pairs = sorted(
        (p["a"], p["b"])
        for p in map(json.loads, run(cli, "dedup", path, "--format", "pairs").splitlines())
    )
    assert cli_pairs == py_pairs
    run(cli, "verify", path)


def test_cli_built_index_opens_in_python(cli: pathlib.Path, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "cli-built"
    run(cli, "create", path, "--threshold", "0.8")
    run(cli, "add", path, REPO / "samples" / "corpus.jsonl")
    run(cli, "delete", path, CORPUS[1]["id"])
    expected = cli_answers(cli, path, tmp_path)
    with mhdb.Index.open(path, read_only=True) as idx:
        assert len(idx) == len(CORPUS) - 1 and CORPUS[1]["id"] not in idx
        assert rounded([idx.query(q) for q in QUERIES]) == expected
        assert rounded(list(idx.query_many(texts=QUERIES))) == expected
    # And a Python writer adds to it, which the CLI then sees.
    with mhdb.Index.open(path) as idx:
        idx.insert("from-python", QUERIES[0])
    hits = cli_answers(cli, path, tmp_path)[0]
    assert ("from-python", 1.0) in hits


def test_python_refuses_the_texts_the_cli_refuses(
    cli: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """One rule for "the text has no shingles": `mhdb add --skip-invalid` stores exactly the
    texts Python's insert accepts, in either kind of index."""
    texts = ["", " ", "\t\n\r ", "\u00a0\u3000", "\u200b", "x", " y ", "two words"]
    for kind in ("minhash", "simhash"):
        path = tmp_path / kind
        run(cli, "create", path, "--kind", kind)
        corpus = tmp_path / f"{kind}.jsonl"
        corpus.write_text(
            "".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(texts))
        )
        run(cli, "add", path, corpus, "--skip-invalid")
        with mhdb.Index.open(path) as idx:
            stored_by_cli = set(idx.keys())
            accepted = set()
            for i, t in enumerate(texts):
                try:
                    idx.insert(f"py{i}", t)
                    accepted.add(f"t{i}")
                except mhdb.InvalidParameterError:
                    pass
        assert stored_by_cli == accepted, kind
        assert {"t0", "t1", "t2"}.isdisjoint(accepted) and {"t5", "t6", "t7"} <= accepted
