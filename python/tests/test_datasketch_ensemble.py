"""``mhdb.datasketch.MinHashLSHEnsemble`` runs datasketch's documented LSH Ensemble example
unchanged apart from the import and a path, keeps its sets across a reopen, and adds sets
later as if they had been indexed with the others."""

import pathlib
import random

import pytest

datasketch = pytest.importorskip("datasketch")


def test_the_documented_example_runs_unchanged(tmp_path: pathlib.Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "ensemble")
    # --- datasketch's documentation, "LSH Ensemble", with the import and path changed ---
    from datasketch import MinHash

    from mhdb.datasketch import MinHashLSHEnsemble

    set1 = set(["cat", "dog", "fish", "cow"])
    set2 = set(["cat", "dog", "fish", "cow", "pig", "elephant", "lion", "tiger",
                "wolf", "bird", "human"])
    set3 = set(["cat", "dog", "car", "van", "train", "plane", "ship", "submarine",
                "rocket", "bike", "scooter", "motorcyle", "SUV", "jet", "horse"])

    # Create MinHash objects
    m1 = MinHash(num_perm=128)
    m2 = MinHash(num_perm=128)
    m3 = MinHash(num_perm=128)
    for d in set1:
        m1.update(d.encode('utf8'))
    for d in set2:
        m2.update(d.encode('utf8'))
    for d in set3:
        m3.update(d.encode('utf8'))

    # Create an LSH Ensemble index with threshold and number of partition
    # settings.
    lshensemble = MinHashLSHEnsemble(path=path, threshold=0.8, num_perm=128,
                                     num_part=32)

    # Index takes an iterable of (key, minhash, size)
    lshensemble.index([("m2", m2, len(set2)), ("m3", m3, len(set3))])

    # Check for membership using the key
    print("m2" in lshensemble)
    print("m3" in lshensemble)

    # Using m1 as the query, get an result iterator
    print("Sets with containment > 0.8:")
    for key in lshensemble.query(m1, len(set1)):
        print(key)
    # --- end of the example ---
    assert capsys.readouterr().out.split("\n") == [
        "True", "True", "Sets with containment > 0.8:", "m2", ""]
    lshensemble.close()
    with MinHashLSHEnsemble(path, threshold=0.8, num_perm=128) as again:
        assert list(again.query(m1, len(set1))) == ["m2"] and len(again) == 2


def minhash(words: set[str]) -> "datasketch.MinHash":
    m = datasketch.MinHash(num_perm=128)
    for w in words:
        m.update(w.encode())
    return m


def test_sets_added_later_answer_as_indexed_together(tmp_path: pathlib.Path) -> None:
    from mhdb.datasketch import MinHashLSHEnsemble

    rng = random.Random(5)
    vocabulary = [f"w{i}" for i in range(3000)]
    sets = {f"s{i}": set(rng.sample(vocabulary, rng.randint(20, 400))) for i in range(60)}
    queries = [set(rng.sample(sorted(s), max(5, len(s) // 3))) for s in list(sets.values())[:20]]
    entries = [(k, minhash(s), len(s)) for k, s in sets.items()]
    together = MinHashLSHEnsemble(tmp_path / "together", threshold=0.7, num_perm=128)
    together.index(entries)
    later = MinHashLSHEnsemble(tmp_path / "later", threshold=0.7, num_perm=128)
    later.index(entries[:30])
    later.close()
    later = MinHashLSHEnsemble(tmp_path / "later", threshold=0.7, num_perm=128)
    for key, m, size in entries[30:]:
        later.insert(key, m, size)
    for i, q in enumerate(queries):
        a = list(together.query(minhash(q), len(q)))
        assert a == list(later.query(minhash(q), len(q)))
        assert f"s{i}" in a, f"query {i} misses the set it was cut from"
    with pytest.raises(ValueError):
        together.insert("bad", minhash({"a"}), 0)


def test_a_wanted_recall_keeps_more_of_the_sets_near_the_threshold(tmp_path: pathlib.Path) -> None:
    from mhdb.datasketch import MinHashLSHEnsemble

    rng = random.Random(8)
    vocabulary = [f"w{i}" for i in range(3000)]
    sets = {f"s{i}": set(rng.sample(vocabulary, rng.randint(100, 400))) for i in range(40)}
    # Queries cut from a set with a tenth of their elements replaced: held at about 0.9.
    queries = []
    for s in list(sets.values())[:20]:
        part = rng.sample(sorted(s), len(s) // 2)
        queries.append(set(part[len(part) // 10:]) | {f"x{rng.random()}" for _ in part[:len(part) // 10]})
    entries = [(k, minhash(s), len(s)) for k, s in sets.items()]
    plain = MinHashLSHEnsemble(tmp_path / "e", threshold=0.9, num_perm=128)
    plain.index(entries)
    plain.close()
    wide = MinHashLSHEnsemble(tmp_path / "e", threshold=0.9, num_perm=128, recall=0.99)
    found_plain = found_wide = 0
    for i, q in enumerate(queries):
        a = set(wide.query(minhash(q), len(q)))
        found_wide += f"s{i}" in a
    wide.close()
    plain = MinHashLSHEnsemble(tmp_path / "e", threshold=0.9, num_perm=128)
    for i, q in enumerate(queries):
        found_plain += f"s{i}" in set(plain.query(minhash(q), len(q)))
    assert found_wide > found_plain
    assert found_wide >= 18
