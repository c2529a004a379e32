"""Index.insert_if_novel and insert_many(novel_only=True): check and store as one step."""

from __future__ import annotations

import pathlib
import threading

import pytest

import mhdb


def variant(cluster: int, v: int) -> str:
    """200 words; variant v >= 1 changes word 7v. Variants of a cluster are near-duplicates
    (Jaccard of word 2-grams >= 0.96); clusters share nothing."""
    words = [f"c{cluster}w{w}" for w in range(200)]
    if v:
        words[v * 7] = f"changed{cluster}x{v}"
    return " ".join(words)


def test_a_near_duplicate_is_skipped_and_names_the_stored_one(
    tmp_index_path: pathlib.Path,
) -> None:
    with mhdb.Index.create(tmp_index_path, shingle="word:2") as idx:
        assert idx.insert_if_novel("a", variant(1, 0)) == []
        skipped = idx.insert_if_novel("b", variant(1, 3))
        assert [k for k, _ in skipped] == ["a"]
        assert skipped[0][1] >= 0.8
        assert "b" not in idx and len(idx) == 1
        assert idx.insert_if_novel("b", variant(1, 3), threshold=1.0) == []
        assert "b" in idx


def test_a_simhash_index_reports_distance_and_cosine(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(
        tmp_index_path, kind="simhash", shingle="word:2", max_hamming=6
    ) as idx:
        assert idx.insert_if_novel("a", variant(1, 0)) == []
        ((key, distance, cosine),) = idx.insert_if_novel("b", variant(1, 3))
        assert key == "a" and 0 <= distance <= 6 and 0.0 < cosine <= 1.0


def test_a_text_without_shingles_is_refused_as_insert_refuses_it(
    tmp_index_path: pathlib.Path,
) -> None:
    with mhdb.Index.create(tmp_index_path) as idx:
        with pytest.raises(mhdb.InvalidParameterError, match='key "e"'):
            idx.insert_if_novel("e", "   ")
        assert len(idx) == 0


def test_insert_many_novel_only_returns_what_it_skipped(tmp_index_path: pathlib.Path) -> None:
    items = [("x0", variant(1, 0)), ("x1", variant(1, 1)), ("y0", variant(2, 0))]
    items += [("x2", variant(1, 2)), ("y1", variant(2, 5))]
    with mhdb.Index.create(tmp_index_path, shingle="word:2") as idx:
        commits: list[int] = []
        skipped = idx.insert_many(
            items, commit_every=2, on_commit=commits.append, novel_only=True
        )
        assert [(key, [k for k, _ in matches]) for key, matches in skipped] == [
            ("x1", ["x0"]),
            ("x2", ["x0"]),
            ("y1", ["y0"]),
        ]
        assert sorted(idx.keys()) == ["x0", "y0"]
        assert commits[-1] == 2
        with pytest.raises(mhdb.InvalidParameterError, match="novel_only"):
            idx.insert_many(items, threshold=0.5)


def test_threads_never_both_store_near_duplicates(tmp_index_path: pathlib.Path) -> None:
    """Eight threads offer every variant of 20 clusters, each in its own order: whatever
    the interleaving, one document per cluster is stored and every skip names it."""
    clusters, variants = 20, 6
    with mhdb.Index.create(tmp_index_path, shingle="word:2") as idx:
        outcomes: list[tuple[str, int, list[tuple[str | bytes, float]]]] = []
        lock = threading.Lock()

        def offer(t: int) -> None:
            order = [(c, v) for c in range(clusters) for v in range(variants)]
            order = order[t * 7 % len(order) :] + order[: t * 7 % len(order)]
            for c, v in order:
                key = f"t{t}-c{c}-v{v}"
                found = idx.insert_if_novel(key, variant(c, v))
                with lock:
                    outcomes.append((key, c, found))

        threads = [threading.Thread(target=offer, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stored = set(idx.keys())
        assert sorted(int(str(k).split("-")[1][1:]) for k in stored) == list(range(clusters))
        for key, cluster, found in outcomes:
            if found:
                assert key not in stored
                for match_key, _ in found:
                    assert match_key in stored
                    assert str(match_key).split("-")[1] == f"c{cluster}"
            else:
                assert key in stored
