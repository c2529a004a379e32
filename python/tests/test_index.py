"""mhdb.Index from Python: the whole API on small data."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import numpy as np
import pytest

import mhdb

A = "The quick brown fox jumps over the lazy dog by the river, while the farmer watches."
B = "The quick brown fox jumped over the lazy dog by the river, while the farmer watches."
C = "Completely unrelated text about databases, write-ahead logs and crash recovery."


def corpus(n: int) -> list[tuple[str, str]]:
    """n documents; every fifth is a near-copy of the one before it."""
    docs = []
    for i in range(n):
        if i % 5 == 4:
            docs.append((f"doc-{i}", docs[-1][1] + " (copy)"))
        else:
            words = " ".join(f"w{(i * 7919 + j * 104729) % 100003}" for j in range(40))
            docs.append((f"doc-{i}", words))
    return docs


def test_create_insert_query_delete(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path, threshold=0.7) as idx:
        assert not idx.closed and not idx.read_only
        assert len(idx) == 0
        idx.insert("a", A)
        idx.insert("c", text=C)
        assert len(idx) == 2 and "a" in idx and b"a" in idx and "b" not in idx
        hits = idx.query(B)
        assert [k for k, _ in hits] == ["a"]
        assert 0.7 <= hits[0][1] < 1.0
        assert idx.query(A, limit=1) == [("a", 1.0)]
        assert idx.query(B, threshold=0.99) == []
        assert idx.delete("a") is True
        assert idx.delete("a") is False
        assert "a" not in idx and len(idx) == 1
    assert idx.closed
    with pytest.raises(mhdb.Error, match="closed"):
        len(idx)
    idx.close()  # twice is fine


def test_reopen_keeps_documents_and_parameters(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path, 0.6, num_perm=64, shingle="word:2", seed=9) as idx:
        idx.insert("a", A)
        params = idx.params
    assert params["num_perm"] == 64 and params["shingle"] == "word:2" and params["seed"] == 9
    with mhdb.Index.open(tmp_index_path) as idx:
        assert idx.params == params
        assert "a" in idx
        assert idx.hasher.num_perm == 64
    # open_or_create on an existing index keeps the stored parameters.
    with mhdb.Index.open_or_create(tmp_index_path, 0.9, num_perm=128) as idx:
        assert idx.params == params
    with mhdb.Index.open_or_create(tmp_index_path.parent / "new", 0.9) as idx:
        assert idx.params["threshold"] == 0.9


def test_keys_str_or_bytes(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path) as idx:
        idx.insert("é-text", A)
        idx.insert(b"\xff\xfe", C)
        idx.insert(b"plain", B)
        # Valid UTF-8 comes back as str, anything else as bytes.
        assert sorted(idx.keys(), key=repr) == sorted(["é-text", b"\xff\xfe", "plain"], key=repr)
        assert set(map(repr, idx)) == set(map(repr, idx.keys()))
        assert b"\xff\xfe" in idx and "plain" in idx
        assert 42 not in idx  # not a key type: simply absent
        with pytest.raises(TypeError):
            idx.insert(42, A)  # type: ignore[arg-type]
        assert {k for k, _ in idx.query(C)} == {b"\xff\xfe"}


def test_signatures_in_and_out(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path, bits=64) as idx:
        h = idx.hasher
        sig = h.sketch(A)
        idx.insert("a", signature=sig)
        idx.insert("l", signature=list(map(int, h.sketch(C))))
        got = idx.get("a")
        assert got is not None and got.dtype == np.uint64 and (got == sig).all()
        assert idx.get("missing") is None
        assert idx.query(signature=h.sketch(B)) == idx.query(B)
        assert idx.query(signature=sig)[0] == ("a", 1.0)
        assert mhdb.MinHasher.jaccard(sig, h.sketch(B)) == pytest.approx(idx.query(B)[0][1])


def test_stored_signature_has_the_low_bits(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path, bits=8) as idx:
        idx.insert("a", A)
        full = idx.hasher.sketch(A)
        assert (idx.get("a") == (full & np.uint64(0xFF))).all()


def test_insert_many_pairs_two_iterables_and_generators(tmp_index_path: pathlib.Path) -> None:
    docs = corpus(203)
    commits: list[int] = []
    with mhdb.Index.create(tmp_index_path) as idx:
        n = idx.insert_many(
            ((k, t) for k, t in docs[:100]), commit_every=32, on_commit=commits.append
        )
        assert n == 100 and commits == [32, 64, 96, 100]
        n = idx.insert_many((k for k, _ in docs[100:]), (t for _, t in docs[100:]))
        assert n == 103 and len(idx) == 203
        sigs = idx.hasher.sketch_many(t for _, t in docs[:3])
        assert idx.insert_many(zip(["s0", "s1", "s2"], sigs)) == 3
        assert idx.query(signature=sigs[1])[0][0] in {"s1", docs[1][0]}
        with pytest.raises(mhdb.InvalidParameterError):
            idx.insert_many(["x", "y"], ["only one text"])
        with pytest.raises(TypeError):
            idx.insert_many(["not a pair"])
        with pytest.raises(mhdb.InvalidParameterError):
            idx.insert_many([("k", A)], commit_every=0)
        assert idx.insert_many([]) == 0


def test_insert_many_bulk_batches_answer_like_wal_batches(tmp_path: pathlib.Path) -> None:
    """Batches of 1,024 documents or more are committed as bulk inserts (a new segment), smaller
    ones through the WAL: the same documents give the same index either way, replaced keys
    included (within a batch and across calls)."""
    docs = corpus(2500)
    again = [(f"doc-{i}", f"{C} {i}") for i in range(0, 2500, 97)]  # replaced in the same call
    later = [(f"doc-{i}", f"{A} {i}") for i in range(1100)]  # replaced by a second call
    with mhdb.Index.create(tmp_path / "bulk") as bulk, mhdb.Index.create(tmp_path / "wal") as wal:
        assert bulk.insert_many(docs + again, commit_every=5000) == 2526
        assert bulk.stats()["memtable_docs"] == 0 and bulk.stats()["segments"] >= 1
        assert bulk.insert_many(later, commit_every=5000) == 1100
        assert wal.insert_many(docs + again, commit_every=100) == 2526
        assert wal.insert_many(later, commit_every=100) == 1100
        assert wal.stats()["memtable_docs"] > 0
        assert len(bulk) == len(wal) == 2500
        assert sorted(bulk.keys()) == sorted(wal.keys())
        for key, _ in docs[::10]:
            assert (bulk.get(key) == wal.get(key)).all(), key
        for _, text in docs[::25] + again[::3] + later[::100]:
            assert bulk.query(text) == wal.query(text)
        assert bulk.query(f"{C} 1164")[0] == ("doc-1164", 1.0)
        assert bulk.query(f"{A} 7")[0] == ("doc-7", 1.0)


def test_insert_many_stops_at_the_first_error(tmp_path: pathlib.Path) -> None:
    """Batches are read ahead of their commits; still, an error (from on_commit, a commit or the
    iterable) keeps the batches acknowledged before it and commits nothing after it."""
    docs = corpus(1000)
    acks: list[int] = []

    def ack_then_stop(n: int) -> None:
        acks.append(n)
        if n == 200:
            raise RuntimeError("stop here")

    with mhdb.Index.create(tmp_path / "callback") as idx:
        with pytest.raises(RuntimeError, match="stop here"):
            idx.insert_many(docs, commit_every=100, on_commit=ack_then_stop)
        assert acks == [100, 200] and len(idx) == 200 and "doc-250" not in idx

    too_long = "k" * (mhdb.MAX_KEY_LEN + 1)
    acks.clear()
    with mhdb.Index.create(tmp_path / "commit") as idx:
        with pytest.raises(mhdb.InvalidParameterError):
            idx.insert_many(
                docs[:150] + [(too_long, A)] + docs[150:], commit_every=100, on_commit=acks.append
            )
        assert acks == [100] and len(idx) == 100 and "doc-99" in idx and "doc-250" not in idx

    def broken() -> Iterator[tuple[str, str]]:
        yield from docs[:250]
        raise ValueError("source broke")

    acks.clear()
    with mhdb.Index.create(tmp_path / "source") as idx:
        with pytest.raises(ValueError, match="source broke"):
            idx.insert_many(broken(), commit_every=100, on_commit=acks.append)
        assert acks == [100, 200] and len(idx) == 200 and "doc-199" in idx and "doc-200" not in idx


def test_insert_refuses_a_text_without_shingles(tmp_path: pathlib.Path) -> None:
    """As `mhdb add` does: a text with no shingles could never be found, so it is not stored."""
    for kind in ("minhash", "simhash"):
        with mhdb.Index.create(tmp_path / kind, kind=kind) as idx:
            for text in ("", " \t\n "):
                with pytest.raises(mhdb.InvalidParameterError) as e:
                    idx.insert("k", text)
                assert e.value.parameter == "text"
                assert 'key "k": the text has no shingles' in str(e.value)
                assert "k" not in idx and len(idx) == 0
            idx.insert("k", "x")  # one character is a shingle
            assert "k" in idx


def test_insert_many_refuses_a_text_without_shingles(tmp_path: pathlib.Path) -> None:
    """The error names the position and the key; the batches committed before the bad
    document's batch stay (as on_commit said), its batch and the rest are not committed."""
    docs = corpus(9)
    acks: list[int] = []
    with mhdb.Index.create(tmp_path / "pairs") as idx:
        with pytest.raises(mhdb.InvalidParameterError) as e:
            idx.insert_many(
                docs[:5] + [("blank", " \n ")] + docs[5:], commit_every=2, on_commit=acks.append
            )
        assert e.value.parameter == "items"
        assert 'items[5] (key "blank"): the text has no shingles' in str(e.value)
        assert acks == [2, 4] and sorted(idx.keys()) == [k for k, _ in docs[:4]]
        assert "doc-4" not in idx and "blank" not in idx
    with mhdb.Index.create(tmp_path / "two") as idx:
        keys, texts = ["a", "b", "c"], [A, C, ""]
        with pytest.raises(mhdb.InvalidParameterError) as e:
            idx.insert_many(iter(keys), iter(texts))
        assert e.value.parameter == "texts" and 'texts[2] (key "c")' in str(e.value)
        assert len(idx) == 0
        # A signature is stored as given (the rule is about texts).
        assert idx.insert_many([("s", idx.hasher.sketch(A))]) == 1


def test_query_many_streams_in_order(tmp_index_path: pathlib.Path) -> None:
    docs = corpus(100)
    with mhdb.Index.create(tmp_index_path) as idx:
        idx.insert_many(docs)
        texts = [t for _, t in docs]
        it = idx.query_many(texts=iter(texts), batch_size=7)
        assert iter(it) is it
        streamed = list(it)
        assert streamed == [idx.query(t) for t in texts]
        sigs = idx.hasher.sketch_many(texts)
        assert list(idx.query_many(signatures=sigs, limit=1)) == [r[:1] for r in streamed]
        assert list(idx.query_many(texts=[])) == []


def test_dedup_formats(tmp_index_path: pathlib.Path) -> None:
    docs = corpus(50)
    with mhdb.Index.create(tmp_index_path, 0.8) as idx:
        idx.insert_many(docs)
        pairs = list(idx.dedup())
        assert {(a, b) for a, b, _ in pairs} == {
            (f"doc-{i - 1}", f"doc-{i}") for i in range(4, 50, 5)
        }
        assert all(j >= 0.8 for _, _, j in pairs)
        clusters = list(idx.dedup(format="clusters"))
        assert sorted(clusters) == sorted([[f"doc-{i - 1}", f"doc-{i}"] for i in range(4, 50, 5)])
        assert sorted(idx.dedup(format="drop")) == sorted(f"doc-{i}" for i in range(4, 50, 5))
        assert all(j == 1.0 for _, _, j in idx.dedup(threshold=1.0))
        with pytest.raises(mhdb.InvalidParameterError):
            idx.dedup(format="nope")


def test_maintenance_stats_verify_export_merge(tmp_path: pathlib.Path) -> None:
    docs = corpus(60)
    with mhdb.Index.create(tmp_path / "a") as a, mhdb.Index.create(tmp_path / "b") as b:
        a.insert_many(docs[:30])
        b.insert_many(docs[30:])
        a.delete("doc-0")
        a.flush()
        a.compact()
        s = a.stats()
        assert s["live_docs"] == 29 and s["segments"] == 1 and s["params"] == a.params
        assert len(s["bands"]) == a.params["bands"] and s["torn_tails"] == 0
        report = a.verify()
        assert report["ok"] and report["problems"] == [] and report["files_checked"] >= 1
        a.export(tmp_path / "shipped")
        b.commit()
    with mhdb.Index.open(tmp_path / "shipped", read_only=True) as shipped:
        assert len(shipped) == 29 and shipped.read_only
    with mhdb.Index.open(tmp_path / "a") as a:
        assert a.merge([tmp_path / "b"]) == 30
        assert a.merge(str(tmp_path / "shipped")) == 29
        assert len(a) == 59


def test_read_only_handle_refreshes(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path) as writer:
        writer.insert("a", A)
        with mhdb.Index.open(tmp_index_path, read_only=True) as reader:
            assert len(reader) == 1
            writer.insert("c", C)
            assert len(reader) == 1  # the state committed when it opened
            reader.refresh()
            assert len(reader) == 2 and "c" in reader
            writer.refresh()  # a no-op on a writer


def test_bad_create_arguments(tmp_index_path: pathlib.Path) -> None:
    with pytest.raises(TypeError, match="unexpected keyword"):
        mhdb.Index.create(tmp_index_path, num_perms=64)
    with pytest.raises(mhdb.InvalidParameterError, match="bands"):
        mhdb.Index.create(tmp_index_path, bands=4)
    with mhdb.Index.create(tmp_index_path, bands=4, rows=8, bucket_cap=None) as idx:
        assert (idx.params["bands"], idx.params["rows"], idx.params["bucket_cap"]) == (4, 8, None)


def test_repr(tmp_index_path: pathlib.Path) -> None:
    idx = mhdb.Index.create(tmp_index_path)
    assert "read-write" in repr(idx)
    idx.close()
    assert "closed" in repr(idx)
    assert repr(mhdb.MinHasher(num_perm=8)).startswith("MinHasher(num_perm=8,")
