"""A containment index from Python: ``Index.create(metric="containment")`` finds the page a
paragraph was quoted from, ``(key, containment, jaccard)``, where a Jaccard query misses it;
exact with stored sets; over shards and ``query_many`` alike; refused where it cannot answer."""

import pathlib
import random

import pytest

import mhdb


def pages() -> dict[str, str]:
    rng = random.Random(3)
    vocabulary = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9)))
                  for _ in range(5000)]
    return {f"page-{i}": " ".join(rng.choices(vocabulary, k=rng.randint(300, 700)))
            for i in range(40)}


def paragraph(text: str) -> str:
    words = text.split()
    return " ".join(words[100:100 + len(words) // 6])


@pytest.mark.parametrize("store_sets", [False, True])
def test_a_quoted_paragraph_is_found_by_containment(tmp_path: pathlib.Path,
                                                     store_sets: bool) -> None:
    docs = pages()
    with mhdb.Index.create(tmp_path / "c", 0.7, metric="containment",
                           store_sets=store_sets) as idx:
        assert idx.params["metric"] == "containment"
        for key, text in docs.items():
            idx.insert(key, text)
        quote = paragraph(docs["page-7"])
        matches = idx.query(quote, containment=0.8)
        assert [m[0] for m in matches] == ["page-7"]
        key, containment, jaccard = matches[0]
        assert containment >= 0.8 and jaccard < 0.3
        if store_sets:
            assert containment == 1.0
        assert all(k != "page-7" for k, _ in idx.query(quote, threshold=0.5))
        many = list(idx.query_many(texts=[quote, docs["page-3"]], containment=0.8))
        assert many[0] == matches and many[1][0][0] == "page-3"


def test_shards_answer_containment_as_one_index(tmp_path: pathlib.Path) -> None:
    docs = list(pages().items())
    for name, part in (("a", docs[:15]), ("b", docs[15:])):
        with mhdb.Index.create(tmp_path / name, 0.7, metric="containment") as idx:
            for key, text in part:
                idx.insert(key, text)
    shards = mhdb.Index.open_many([tmp_path / "a", tmp_path / "b"])
    quote = paragraph(dict(docs)["page-20"])
    assert [m[0] for m in shards.query(quote, containment=0.8)] == ["page-20"]


def test_what_cannot_be_answered_is_refused(tmp_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_path / "j") as idx:
        idx.insert("a", "some text that is long enough")
        with pytest.raises(mhdb.InvalidParameterError) as e:
            idx.query("some text", containment=0.5)
        assert "not a containment index" in str(e.value)
    with mhdb.Index.create(tmp_path / "c", metric="containment") as idx:
        with pytest.raises(mhdb.InvalidParameterError):
            idx.query("some text", containment=0.5, threshold=0.5)
        with pytest.raises(mhdb.InvalidParameterError):
            idx.query("some text", containment=1.5)
    with pytest.raises(mhdb.InvalidParameterError) as e:
        mhdb.Index.create(tmp_path / "x", metric="cosine")
    assert "unknown metric" in str(e.value)
    with pytest.raises(mhdb.InvalidParameterError):
        mhdb.Index.create(tmp_path / "y", metric="containment", bands=4, rows=4)


def test_dedup_table_drops_what_a_longer_document_holds(tmp_path: pathlib.Path) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    docs = pages()
    quotes = {f"quote-{i}": paragraph(docs[f"page-{i}"]) for i in range(0, 40, 5)}
    everything = {**quotes, **docs}
    with mhdb.Index.create(tmp_path / "c", 0.7, metric="containment", store_sets=True) as idx:
        for key, text in everything.items():
            idx.insert(key, text)
        table = idx.dedup_table(0.8, keep="longest", documents=iter(everything.items()))
        assert isinstance(table, pyarrow.Table)
        rows = {r["id"]: r for r in table.to_pylist()}
        dropped = {k for k, r in rows.items() if not r["keep"]}
        assert dropped == set(quotes)
        for key in quotes:
            row = rows[key]
            page = "page-" + key.split("-")[1]
            assert row["cluster"] == page and row["best_match"] == page
            assert row["similarity"] == pytest.approx(1.0)
        with pytest.raises(mhdb.InvalidParameterError, match="documents"):
            idx.dedup_table(0.8, keep="longest")
        with pytest.raises(ValueError, match=r"\(id, text\) pair"):
            idx.dedup_table(0.8, documents=[("page-1", "text", "extra")])
    with mhdb.Index.create(tmp_path / "j", 0.7) as idx:
        idx.insert("a", docs["page-1"])
        with pytest.raises(mhdb.InvalidParameterError, match="containment index"):
            idx.dedup_table(documents=[("a", docs["page-1"])])


def test_recall_keeps_what_the_estimate_puts_just_below_the_threshold(
        tmp_path: pathlib.Path) -> None:
    docs = pages()
    rng = random.Random(5)
    with mhdb.Index.create(tmp_path / "c", 0.7, metric="containment") as idx:
        for key, text in docs.items():
            idx.insert(key, text)
        # A paragraph with a tenth of its words changed: held at about 0.85 by its page.
        quotes = []
        for i in range(0, 40, 4):
            words = paragraph(docs[f"page-{i}"]).split()
            for j in rng.sample(range(len(words)), len(words) // 10):
                words[j] = "zz" + words[j]
            quotes.append(" ".join(words))
        plain = list(idx.query_many(texts=quotes, containment=0.9))
        wide = list(idx.query_many(texts=quotes, containment=0.9, recall=0.99))
        strict = [idx.query(q, containment=0.9, recall=0.01) for q in quotes]
        for p, w, s in zip(plain, wide, strict):
            assert {m[0] for m in s} <= {m[0] for m in p} <= {m[0] for m in w}
            assert all(c >= 0.9 for _, c, _ in p)
        found = [f"page-{i}" in {m[0] for m in w} for i, w in zip(range(0, 40, 4), wide)]
        assert sum(found) > sum(f"page-{i}" in {m[0] for m in p}
                                for i, p in zip(range(0, 40, 4), plain))
        assert all(found)
        for bad in (0.0, 1.0):
            with pytest.raises(mhdb.InvalidParameterError) as e:
                idx.query(quotes[0], containment=0.9, recall=bad)
            assert "recall" in str(e.value)
