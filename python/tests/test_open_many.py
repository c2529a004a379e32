"""mhdb.Index.open_many: the sample corpus (real English text) split four ways, opened as
shards, answers every read as the merged index of the four answers it; a key stored in two
shards answers from the later one; a shard given twice, shards whose parameters differ and
writes are refused, each with an error that says why."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import mhdb

REPO = pathlib.Path(__file__).resolve().parents[2]


def corpus() -> list[tuple[str, str]]:
    lines = (REPO / "samples" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    return [(d["id"], d["text"]) for d in map(json.loads, lines)]


def split_and_merge(tmp: pathlib.Path, **params: object) -> tuple[list[pathlib.Path], mhdb.Index]:
    """The corpus in four shards (``tmp/shard-N``) and, open, the index holding it all."""
    docs = corpus()
    quarter = -(-len(docs) // 4)
    paths = []
    for i in range(4):
        path = tmp / f"shard-{i}"
        with mhdb.Index.create(path, 0.5, **params) as idx:  # type: ignore[call-overload]
            idx.insert_many(docs[i * quarter : (i + 1) * quarter])
        paths.append(path)
    merged = mhdb.Index.create(tmp / "merged", 0.5, **params)  # type: ignore[call-overload]
    merged.insert_many(docs)
    return paths, merged


@pytest.mark.parametrize("store_sets", [False, True])
def test_shards_answer_as_the_merged_index(tmp_path: pathlib.Path, store_sets: bool) -> None:
    paths, merged = split_and_merge(tmp_path, store_sets=store_sets)
    docs = corpus()
    texts = [text for _, text in docs[::17]]
    with mhdb.Index.open_many(paths) as shards, merged:
        assert shards.paths == [str(p) for p in paths] and shards.read_only
        assert shards.params == merged.params
        found = 0
        for text in texts:
            assert shards.query(text) == merged.query(text)
            assert shards.query(text, top=5) == merged.query(text, top=5)
            assert shards.query(text, limit=2) == merged.query(text, limit=2)
            assert shards.query(text, threshold=0.3) == merged.query(text, threshold=0.3)
            assert shards.query(text, exact=False) == merged.query(text, exact=False)
            sig = merged.hasher.sketch(text)
            assert shards.query(signature=sig) == merged.query(signature=sig)
            found += len(shards.query(text))
        assert found > len(texts), "the queries find near-duplicates, not only themselves"
        assert list(shards.query_many(texts, top=3)) == list(merged.query_many(texts, top=3))
        for fmt in ("pairs", "clusters", "drop"):
            assert list(shards.dedup(format=fmt)) == list(merged.dedup(format=fmt)), fmt
        assert list(shards.dedup(0.8)) == list(merged.dedup(0.8))
        assert len(list(merged.dedup())) > 0
        assert len(shards) == len(merged) == len(docs)
        for key, _ in docs[::31]:
            assert key in shards
            got = shards.get(key)
            assert got is not None
            np.testing.assert_array_equal(got, merged.get(key))
        assert "no-such-key" not in shards and shards.get("no-such-key") is None
        assert 42 not in shards
        stats = shards.stats()
        assert [s["path"] for s in stats["shards"]] == [str(p) for p in paths]
        assert stats["total"]["shards"] == 4
        assert stats["total"]["live_docs"] == len(docs)
        assert sum(s["live_docs"] for s in stats["shards"]) == len(docs)
        report = shards.verify()
        assert report["ok"] and report["problems"] == []
        assert report["files_checked"] >= 4


def test_a_key_in_two_shards_answers_from_the_later_shard(tmp_path: pathlib.Path) -> None:
    docs = corpus()
    (key, first_text), (_, other_text) = docs[0], docs[200]
    a, b = tmp_path / "a", tmp_path / "b"
    with mhdb.Index.create(a, 0.5) as idx:
        idx.insert(key, first_text)
    with mhdb.Index.create(b, 0.5) as idx:
        idx.insert(key, other_text)
        later = idx.get(key)
    with mhdb.Index.open_many([a, b]) as shards:
        assert key not in [k for k, _ in shards.query(first_text)]
        assert shards.query(other_text)[0] == (key, 1.0)
        np.testing.assert_array_equal(shards.get(key), later)
        # Each shard counts its own copy: len() does not read every key.
        assert len(shards) == 2


def test_a_shard_given_twice_is_refused(tmp_path: pathlib.Path) -> None:
    paths, merged = split_and_merge(tmp_path)
    merged.close()
    for twice in ([paths[0], paths[1], paths[0]], [paths[2], paths[2].parent / "." / "shard-2"]):
        with pytest.raises(mhdb.InvalidParameterError) as e:
            mhdb.Index.open_many(twice)
        assert "same database" in str(e.value), e.value
    with pytest.raises(mhdb.InvalidParameterError, match="no database"):
        mhdb.Index.open_many([])
    with pytest.raises(TypeError, match="iterable of paths"):
        mhdb.Index.open_many(str(paths[0]))  # type: ignore[arg-type]
    with pytest.raises(mhdb.NotFoundError):
        mhdb.Index.open_many([paths[0], tmp_path / "missing"])


def test_shards_with_other_parameters_are_refused_naming_it(tmp_path: pathlib.Path) -> None:
    docs = corpus()
    a, b = tmp_path / "a", tmp_path / "b"
    with mhdb.Index.create(a, 0.5, seed=1) as idx:
        idx.insert_many(docs[:10])
    with mhdb.Index.create(b, 0.5, seed=2) as idx:
        idx.insert_many(docs[10:20])
    with pytest.raises(mhdb.InvalidParameterError) as e:
        mhdb.Index.open_many([a, b])
    message = str(e.value)
    assert "seed" in message and str(a) in message and str(b) in message, message


def test_shards_are_read_only_and_close(tmp_path: pathlib.Path) -> None:
    paths, merged = split_and_merge(tmp_path)
    merged.close()
    shards = mhdb.Index.open_many(paths)
    writes = [
        lambda: shards.insert("k", "some text here"),
        lambda: shards.insert_if_novel("k", "some text here"),
        lambda: shards.insert_many([("k", "some text here")]),
        lambda: shards.delete("k"),
        lambda: shards.merge(str(paths[0])),
        shards.commit,
        shards.flush,
        shards.compact,
    ]
    for write in writes:
        with pytest.raises(mhdb.ReadOnlyError, match="read-only"):
            write()
    assert "k" not in shards
    # A writer commits to one shard; refresh() sees it.
    with mhdb.Index.open(paths[1]) as writer:
        writer.insert("late", "a late document about lanterns, harbours and night trains")
    assert "late" not in shards
    shards.refresh()
    assert "late" in shards and len(shards) == len(corpus()) + 1
    shards.close()
    assert shards.closed
    with pytest.raises(mhdb.Error, match="closed"):
        shards.query("text")
    with pytest.raises(mhdb.Error, match="closed"):
        len(shards)


def test_keyed_shards_take_the_key_file(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MHDB_KEY_FILE", raising=False)
    key = tmp_path / "idx.key"
    key.write_text("5a" * 32 + "\n")
    docs = corpus()
    paths = [tmp_path / "a", tmp_path / "b"]
    for i, path in enumerate(paths):
        with mhdb.Index.create(path, key_file=key) as idx:
            idx.insert_many(docs[i * 5 : (i + 1) * 5])
    with mhdb.Index.open_many(paths, key_file=key) as shards:
        assert shards.query(docs[7][1])[0] == (docs[7][0], 1.0)
    with mhdb.Index.open_many(paths) as shards:
        with pytest.raises(mhdb.Error, match="MHDB_KEY_FILE"):
            shards.query(docs[7][1])
