"""mhdb.spark in Spark local mode against the single-machine engine, on a messy multilingual
corpus of 3,000 documents: the pairs equal `mhdb dedup`'s, the clusters equal the connected
components of those pairs, and `keep` is false for exactly what `mhdb dedup --format drop`
prints. Also: signatures equal MinHasher's, and shards survive a failed task attempt.

Needs pyspark (``pip install './python[spark]'``) and Java 17+; skipped otherwise."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest

# .ci/run sets MHDB_REQUIRE_SPARK=1 where it installed Spark and Java: there a missing piece
# fails the run instead of skipping it.
if os.environ.get("MHDB_REQUIRE_SPARK") != "1":
    pytest.importorskip("pyspark", reason="pyspark is not installed: pip install './python[spark]'")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip(
            "no Java runtime (java on PATH or JAVA_HOME) for Spark", allow_module_level=True
        )

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from pyspark import TaskContext  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

import messy_corpus  # noqa: E402
import mhdb  # noqa: E402
from mhdb import spark as mspark  # noqa: E402

DOCS = 3000


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    # Python workers must run this interpreter, the one where mhdb is installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # local[2,2]: two threads, and a failed task is retried once (plain local[N] never retries).
    session = (
        SparkSession.builder.master("local[2,2]")
        .appName("mhdb-spark-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "500")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def run(cli: pathlib.Path, *args: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


class Reference:
    """The corpus in an index made by the CLI, and the CLI's dedup answers."""

    def __init__(
        self, cli: pathlib.Path, tmp: pathlib.Path, docs: list[dict], create_args: list[str]
    ) -> None:
        self.docs = docs
        self.text_of = {d["id"]: d["text"] for d in docs}
        self.index = tmp / "idx"
        run(cli, "create", self.index, *create_args)
        with mhdb.Index.open(self.index, read_only=True) as idx:
            self.params = idx.params
            self.hasher = idx.hasher
            sigs = idx.hasher.sketch_many([d["text"] for d in docs])
        # `mhdb add` refuses a text without shingles (similar to nothing); Spark gets them all.
        empty = np.all(sigs == np.uint64(2**64 - 1), axis=1)
        self.empty_ids = {d["id"] for d, e in zip(docs, empty) if e}
        corpus = tmp / "corpus.jsonl"
        messy_corpus.write_jsonl([d for d, e in zip(docs, empty) if not e], corpus)
        run(cli, "add", self.index, corpus)
        done = run(cli, "dedup", self.index, "--format", "pairs")
        self.pairs = {
            (p["a"], p["b"]): p["jaccard"] for p in map(json.loads, done.stdout.splitlines())
        }
        done = run(cli, "dedup", self.index, "--format", "drop", "--json")
        self.drop = {json.loads(line)["id"] for line in done.stdout.splitlines()}
        done = run(cli, "dedup", self.index, "--format", "clusters")
        self.star_clusters = [json.loads(line) for line in done.stdout.splitlines()]


def components(ids_in_order: list[str], pairs: set[tuple[str, str]]) -> dict[str, str]:
    """id -> first id (in insertion order) of its connected component, by union-find."""
    rank = {d: i for i, d in enumerate(ids_in_order)}
    up = {d: d for d in ids_in_order}

    def root(d: str) -> str:
        while up[d] != d:
            up[d] = up[up[d]]
            d = up[d]
        return d

    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            lo, hi = sorted((ra, rb), key=rank.__getitem__)
            up[hi] = lo
    return {d: root(d) for d in ids_in_order}


def check_against(ref: Reference, result: mspark.DedupResult, ids_in_order: list[str]) -> None:
    spark_pairs = {(r.a, r.b): r.jaccard for r in result.pairs.collect()}
    assert spark_pairs.keys() == ref.pairs.keys()
    assert {k: round(v, 6) for k, v in spark_pairs.items()} == {
        k: round(v, 6) for k, v in ref.pairs.items()
    }
    rows = {r[0]: (r.cluster, r.keep) for r in result.docs.collect()}
    assert len(rows) == len(ids_in_order)
    expected = components(ids_in_order, set(ref.pairs))
    assert {d: c for d, (c, _) in rows.items()} == expected
    assert {d for d, (_, keep) in rows.items() if not keep} == ref.drop


@pytest.fixture(scope="module")
def messy(cli: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> Reference:
    docs = messy_corpus.build(DOCS)
    # A small bucket cap, so that the banner's buckets (40 identical signatures) are capped.
    return Reference(
        cli,
        tmp_path_factory.mktemp("messy"),
        docs,
        ["--threshold", "0.7", "--seed", "7", "--bucket-cap", "8"],
    )


def test_dedup_equals_the_engine_in_insertion_order(spark: SparkSession, messy: Reference) -> None:
    df = spark.createDataFrame(pd.DataFrame(messy.docs)).repartition(3)
    result = mspark.dedup(df, "id", "text", params=messy.params, order_col="pos")
    ids_in_order = [d["id"] for d in sorted(messy.docs, key=lambda d: d["pos"])]
    check_against(messy, result, ids_in_order)
    # The corpus exercises what could go wrong: exact copies, capped buckets, many pairs,
    # components that chain (a component is not a star cluster) and a keep rule that needs
    # several rounds. The banner's 40 copies are one text after normalization: each pairs
    # with the first of them at similarity 1 (39 pairs, not 780).
    banner = [i for i in ids_in_order if "cookies" in messy.text_of[i].lower()]
    assert len(banner) == 40
    assert {p: j for p, j in messy.pairs.items() if p[0] in banner or p[1] in banner} == {
        (banner[0], b): 1.0 for b in banner[1:]
    }
    # The footer's 30 near copies share buckets over the cap of 8, which keeps the 8 whose
    # ids hash lowest (as the engine does, whatever the order): far fewer pairs than the 435
    # of an uncapped pass.
    footer = {i for i in ids_in_order if "newsletter" in messy.text_of[i].lower()}
    assert len(footer) == 30
    assert 0 < sum(1 for a, b in messy.pairs if a in footer and b in footer) < 435 // 2
    assert len(messy.pairs) > 300
    clusters = components(ids_in_order, set(messy.pairs))
    sizes: dict[str, int] = {}
    for c in clusters.values():
        sizes[c] = sizes.get(c, 0) + 1
    multi = sum(1 for n in sizes.values() if n > 1)
    assert multi < len(messy.star_clusters), "every component is a star: the corpus does not chain"
    assert len(messy.empty_ids) >= 3
    assert result.keep_rounds >= 2
    result.unpersist()


def test_dedup_equals_the_engine_in_id_order_with_4_bit_signatures(
    spark: SparkSession, cli: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    # Without order_col, documents are ordered by id: insert them into the index in id order.
    docs = sorted(
        messy_corpus.build(1200, seed=99, banner_copies=12, with_samples=False),
        key=lambda d: d["id"],
    )
    ref = Reference(
        cli,
        tmp_path,
        docs,
        [
            "--threshold",
            "0.6",
            "--bits",
            "4",
            "--scheme",
            "kperm",
            "--perms",
            "96",
            "--shingle",
            "word:2",
        ],
    )
    df = spark.createDataFrame(pd.DataFrame(docs)[["id", "text"]])
    result = mspark.dedup(df, params=ref.params, threshold=0.65)
    ref_at = run(cli, "dedup", ref.index, "--threshold", "0.65", "--format", "pairs")
    ref.pairs = {
        (p["a"], p["b"]): p["jaccard"] for p in map(json.loads, ref_at.stdout.splitlines())
    }
    ref.drop = {
        json.loads(x)["id"]
        for x in run(
            cli, "dedup", ref.index, "--threshold", "0.65", "--format", "drop", "--json"
        ).stdout.splitlines()
    }
    assert len(ref.pairs) > 50
    check_against(ref, result, [d["id"] for d in docs])
    result.unpersist()


def keep_decisions(result: mspark.DedupResult) -> tuple[set[str], set[tuple[str, str]]]:
    """The dropped ids and the pairs of a Spark dedup."""
    dropped = {r[0] for r in result.docs.collect() if not r.keep}
    return dropped, {(r.a, r.b) for r in result.pairs.collect()}


@pytest.mark.parametrize("keep_by", ["last", "longest", "shortest"])
def test_keep_by_drops_what_the_engine_drops_in_that_order(
    spark: SparkSession, cli: pathlib.Path, messy: Reference, keep_by: str
) -> None:
    df = spark.createDataFrame(pd.DataFrame(messy.docs)).repartition(3)
    result = mspark.dedup(df, "id", "text", params=messy.params, order_col="pos", keep_by=keep_by)
    done = run(cli, "dedup", messy.index, "--format", "drop", "--json", "--keep", keep_by)
    engine = {json.loads(line)["id"] for line in done.stdout.splitlines()}
    dropped, _ = keep_decisions(result)
    assert dropped == engine
    assert dropped != messy.drop, "the order changes nothing on this corpus"
    result.unpersist()


def greedy_drops(order: list[str], pairs: set[tuple[str, str]]) -> set[str]:
    """The engine's keep rule, written plainly: visiting documents in order, one not yet
    dropped is kept and drops its neighbours not yet kept."""
    neighbours: dict[str, set[str]] = {}
    for a, b in pairs:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    kept: set[str] = set()
    dropped: set[str] = set()
    for d in order:
        if d not in dropped:
            kept.add(d)
            dropped |= neighbours.get(d, set()) - kept
    return dropped


def test_keep_by_a_column_keeps_the_highest_or_lowest_value(
    spark: SparkSession, messy: Reference
) -> None:
    """``max:COL`` / ``min:COL`` against the rule computed here from the engine's pairs: each
    group of exact copies is represented by its member first in that order (nulls last, ties
    to the earlier document), the others dropped; then the greedy rule in that order."""
    docs = [
        {**d, "score": None if i % 5 == 0 else (i * 7919) % 13, "label": f"l{(i * 31) % 17:02d}"}
        for i, d in enumerate(messy.docs)
    ]
    pos = {d["id"]: d["pos"] for d in docs}
    stored = [d for d in docs if d["id"] not in messy.empty_ids]
    hashes = messy.hasher.exact_hashes([d["text"] for d in stored])
    groups: dict[tuple[int, int], list[str]] = {}
    for d, h in zip(stored, hashes):
        groups.setdefault((int(h[0]), int(h[1])), []).append(d["id"])
    groups = {h: sorted(g, key=pos.__getitem__) for h, g in groups.items() if len(g) > 1}
    oldest = {g[0] for g in groups.values()}
    engine_copies = {(g[0], m) for g in groups.values() for m in g[1:]}
    near = set(messy.pairs) - engine_copies
    df = spark.createDataFrame(pd.DataFrame(docs)).repartition(3)
    for keep_by, value, highest in [("max:score", "score", True), ("min:label", "label", False)]:
        of = {d["id"]: d[value] for d in docs}

        def rank(i: str) -> tuple:
            v = of[i]
            if v is None:
                return (1, 0, pos[i])
            return (0, -v if highest else v, pos[i])

        rep = {g[0]: min(g, key=rank) for g in groups.values()}
        copies = {m for g in groups.values() for m in g if m != rep[g[0]]}
        # The engine's pairs of a representative are those of its group's oldest member.
        stand = lambda i: rep.get(i, i)  # noqa: E731
        near_reps = {tuple(sorted((stand(a), stand(b)), key=pos.__getitem__)) for a, b in near}
        order = sorted((i for i in of if i not in copies), key=rank)
        want = copies | greedy_drops(order, near_reps)
        copy_pairs = {
            tuple(sorted((rep[g[0]], m), key=pos.__getitem__))
            for g in groups.values()
            for m in g
            if m != rep[g[0]]
        }
        result = mspark.dedup(
            df, "id", "text", params=messy.params, order_col="pos", keep_by=keep_by
        )
        dropped, pairs = keep_decisions(result)
        assert pairs == near_reps | copy_pairs, keep_by
        assert dropped == want, keep_by
        assert any(rep[o] != o for o in oldest), "no group changes its representative"
        assert dropped != messy.drop
        result.unpersist()


def test_keep_by_refuses_what_it_cannot_order(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", "some text here", [1])], "id string, text string, l array<int>")
    with pytest.raises(ValueError, match="not a keep order"):
        mspark.dedup(df, keep_by="biggest")
    with pytest.raises(ValueError, match="no column 'nope'"):
        mspark.dedup(df, keep_by="max:nope")
    with pytest.raises(ValueError, match="not a number or string"):
        mspark.dedup(df, keep_by="min:l")


def test_sign_equals_minhasher(spark: SparkSession, messy: Reference) -> None:
    docs = messy.docs[:700]
    params = {"num_perm": 64, "seed": 3, "shingle": "char:4", "nfkc": True}
    df = spark.createDataFrame(pd.DataFrame(docs)[["id", "text"]])
    got = {
        r.id: np.frombuffer(r.signature, dtype="<u8")
        for r in mspark.sign(df, params=params).collect()
    }
    want = mhdb.MinHasher(**params).sketch_many([d["text"] for d in docs])
    assert len(got) == len(docs)
    for d, w in zip(docs, want):
        assert np.array_equal(got[d["id"]], w), d["id"]


def test_dedup_rejects_duplicate_ids_and_null_texts(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", "some text here"), ("a", "other text")], ["id", "text"])
    with pytest.raises(ValueError, match="ids must be unique"):
        mspark.dedup(df)
    df = spark.createDataFrame([("a", "some text here"), ("b", None)], "id string, text string")
    with pytest.raises(Exception, match="column 'text' is null for id='b'"):
        mspark.sign(df).collect()
    with pytest.raises(TypeError, match="unknown index parameter"):
        mspark.resolve_params({"num_perms": 64})


def failing_first_attempt(marker: pathlib.Path):  # noqa: ANN201 (a pandas UDF)
    """The identity on texts, except that partition 1's first attempt fails on its second
    Arrow batch (the shard writer may have started); it leaves ``marker`` behind as proof."""
    batches_seen: dict[int, int] = {}

    @F.pandas_udf(T.StringType())
    def identity(text: pd.Series) -> pd.Series:
        ctx = TaskContext.get()
        attempt = ctx.taskAttemptId()
        batches_seen[attempt] = batches_seen.get(attempt, 0) + 1
        if ctx.partitionId() == 1 and ctx.attemptNumber() == 0 and batches_seen[attempt] == 2:
            marker.write_text(f"failed task attempt {attempt}\n")
            raise RuntimeError("injected failure of a first attempt")
        return text

    return identity


def test_build_shards_survives_a_failed_attempt_then_merge_and_export(
    spark: SparkSession, messy: Reference, tmp_path: pathlib.Path
) -> None:
    docs = messy.docs
    params = dict(messy.params)
    df = spark.createDataFrame(pd.DataFrame(docs)[["id", "text"]]).repartition(3, "id")
    marker = tmp_path / "failed-once"
    flaky = df.withColumn("text", failing_first_attempt(marker)("text"))
    out = tmp_path / "shards"
    # What a crashed earlier run leaves: a half-written temporary shard.
    (out / ".tmp-shard-00002-attempt999" / "index").mkdir(parents=True)
    (out / ".tmp-shard-00002-attempt999" / "index" / "CURRENT").write_text("half")
    shards = mspark.build_shards(flaky, str(out), params)
    assert marker.exists(), "the injected failure did not happen"
    assert [s.partition for s in shards] == [0, 1, 2]
    assert sorted(os.listdir(out)) == ["shard-00000", "shard-00001", "shard-00002"]
    assert sum(s.docs for s in shards) == len(docs) - len(messy.empty_ids)
    assert sum(s.skipped for s in shards) == len(messy.empty_ids)
    keys: set[str] = set()
    for s in shards:
        with mhdb.Index.open(s.path, read_only=True) as idx:
            assert idx.verify()["ok"]
            assert idx.params == messy.params
            shard_keys = set(idx.keys())
        assert not keys & shard_keys
        keys |= shard_keys
    assert keys == {d["id"] for d in docs} - messy.empty_ids
    # Running it again commits nothing new: every shard is already there.
    mtimes = {s.path: os.stat(s.path).st_mtime_ns for s in shards}
    again = mspark.build_shards(df, str(out), params)
    assert again == shards and {s.path: os.stat(s.path).st_mtime_ns for s in again} == mtimes

    merged, shipped = tmp_path / "merged", tmp_path / "shipped"
    assert mspark.merge(shards, merged) == len(docs) - len(messy.empty_ids)
    mspark.export(merged, shipped)
    with (
        mhdb.Index.open(shipped, read_only=True) as idx,
        mhdb.Index.open(messy.index, read_only=True) as ref,
    ):
        assert len(idx) == len(ref) and idx.verify()["ok"]
        # The same documents with the same stored signatures as the CLI-built index.
        assert set(idx.keys()) == set(ref.keys())
        for d in docs[::7]:
            if d["id"] in messy.empty_ids:
                continue
            assert np.array_equal(idx.get(d["id"]), ref.get(d["id"])), d["id"]


def test_version_2_shards_merge_as_they_are_and_writers_name_index_upgrade(
    tmp_path: pathlib.Path,
) -> None:
    """Spark's jobs open existing indexes only to read them (``merge`` and ``export`` sources;
    every index they write is new): a shard of format version 2 is read as it is, into a
    version-3 index with the same documents, and a writer's open of it is refused naming the
    conversion Python users run, the shard left as it was."""
    fixture = pathlib.Path(__file__).resolve().parents[2] / "tests" / "golden" / "db-v2"
    shard, dest = tmp_path / "shard", tmp_path / "dest"
    shutil.copytree(fixture, shard)
    before = {p.name: p.read_bytes() for p in shard.iterdir()}
    with mhdb.Index.open(shard, read_only=True) as idx:
        documents = {k: idx.get(k).tolist() for k in idx.keys()}
    assert mspark.merge([shard], dest) == len(documents)
    with mhdb.Index.open(dest, read_only=True) as idx:
        assert idx.stats()["identity"] is not None  # only version 3 has one
        assert {k: idx.get(k).tolist() for k in idx.keys()} == documents
    with pytest.raises(mhdb.Error) as e:
        mhdb.Index.open(shard)
    assert "mhdb.Index.upgrade(path)" in str(e.value), str(e.value)
    assert {p.name: p.read_bytes() for p in shard.iterdir()} == before
