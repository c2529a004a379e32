"""Every exception path: the class, its place in the tree, and the details it carries."""

from __future__ import annotations

import os
import pathlib
import struct
import subprocess
import sys
import zlib

import pytest

import mhdb

TEXT = "The quick brown fox jumps over the lazy dog by the river."


def test_tree() -> None:
    for cls in (
        mhdb.CorruptionError,
        mhdb.LockedError,
        mhdb.NotFoundError,
        mhdb.InvalidParameterError,
        mhdb.ReadOnlyError,
        mhdb.UnsupportedVersionError,
        mhdb.IoError,
    ):
        assert issubclass(cls, mhdb.Error)
    assert issubclass(mhdb.InvalidParameterError, ValueError)
    assert issubclass(mhdb.ParameterMismatchError, mhdb.InvalidParameterError)
    assert issubclass(mhdb.SchemeMismatchError, mhdb.InvalidParameterError)
    assert issubclass(mhdb.IoError, OSError)


def test_not_found(tmp_path: pathlib.Path) -> None:
    with pytest.raises(mhdb.NotFoundError) as e:
        mhdb.Index.open(tmp_path / "none")
    assert e.value.path == str(tmp_path / "none")
    assert "no CURRENT file" in str(e.value) and e.value.offset is None


def test_locked_in_another_process(tmp_index_path: pathlib.Path) -> None:
    mhdb.Index.create(tmp_index_path).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import mhdb, sys; i = mhdb.Index.open(sys.argv[1]); print('open', flush=True); sys.stdin.read()",
            str(tmp_index_path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        with pytest.raises(mhdb.LockedError) as e:
            mhdb.Index.open(tmp_index_path)
        assert e.value.path is not None and e.value.path.startswith(str(tmp_index_path))
        # Readers take no lock.
        with mhdb.Index.open(tmp_index_path, read_only=True) as reader:
            assert len(reader) == 0
    finally:
        holder.communicate("")
    mhdb.Index.open(tmp_index_path).close()


def test_locked_in_this_process(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path):
        with pytest.raises(mhdb.LockedError) as e:
            mhdb.Index.open(tmp_index_path)
    # The holder is this process: the message must not send the user looking for another one.
    assert "this process" in str(e.value)
    assert "another process" not in str(e.value)


def test_corruption_names_file_and_offset(tmp_index_path: pathlib.Path) -> None:
    mhdb.Index.create(tmp_index_path).close()
    current = tmp_index_path / "CURRENT"
    data = bytearray(current.read_bytes())
    data[12] ^= 0xFF  # the generation: the CRC no longer matches
    current.write_bytes(bytes(data))
    with pytest.raises(mhdb.CorruptionError) as e:
        mhdb.Index.open(tmp_index_path)
    assert e.value.path == str(current)
    assert isinstance(e.value.offset, int)
    assert e.value.detail


def test_verify_reports_damage_without_raising(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path) as idx:
        idx.insert_many((f"k{i}", f"{TEXT} {i}") for i in range(50))
        idx.flush()
    seg = next(tmp_index_path.glob("seg-*.seg"))
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0x55
    seg.write_bytes(bytes(data))
    with mhdb.Index.open(tmp_index_path, read_only=True) as idx:
        report = idx.verify()
    assert not report["ok"]
    problem = report["problems"][0]
    assert isinstance(problem, mhdb.CorruptionError) and problem.path == str(seg)


def test_unsupported_version(tmp_index_path: pathlib.Path) -> None:
    mhdb.Index.create(tmp_index_path).close()
    current = tmp_index_path / "CURRENT"
    data = bytearray(current.read_bytes())
    data[8:12] = struct.pack("<I", 99)
    data[32:36] = struct.pack("<I", zlib.crc32(bytes(data[:32])))
    current.write_bytes(bytes(data))
    with pytest.raises(mhdb.UnsupportedVersionError) as e:
        mhdb.Index.open(tmp_index_path)
    assert e.value.found == 99 and e.value.supported == 3 and e.value.path == str(current)


def test_invalid_parameters(tmp_index_path: pathlib.Path) -> None:
    with pytest.raises(mhdb.InvalidParameterError) as e:
        mhdb.MinHasher(num_perm=0)
    assert e.value.parameter == "num_perm" and "8192" in e.value.detail
    with pytest.raises(ValueError):
        mhdb.MinHasher(scheme="nope")
    with pytest.raises(mhdb.InvalidParameterError) as e:
        mhdb.MinHasher(shingle="char:0")
    assert e.value.parameter == "shingle"
    with pytest.raises(mhdb.InvalidParameterError) as e:
        mhdb.Index.create(tmp_index_path, threshold=1.5)
    assert e.value.parameter == "threshold"
    with pytest.raises(mhdb.InvalidParameterError):
        mhdb.Index.create(tmp_index_path, bits=3)
    with mhdb.Index.create(tmp_index_path) as idx:
        with pytest.raises(mhdb.InvalidParameterError) as e:
            idx.insert("k", signature=[1, 2, 3])
        assert e.value.parameter == "signature"
        with pytest.raises(mhdb.InvalidParameterError) as e:
            idx.insert("k" * (mhdb.MAX_KEY_LEN + 1), TEXT)
        assert e.value.parameter == "key"
        with pytest.raises(mhdb.InvalidParameterError):
            idx.insert("k")
        with pytest.raises(mhdb.InvalidParameterError):
            idx.insert("k", TEXT, signature=[1])
        with pytest.raises(mhdb.InvalidParameterError):
            idx.query()
        with pytest.raises(mhdb.InvalidParameterError):
            idx.query(TEXT, threshold=-0.1)
        with pytest.raises(mhdb.InvalidParameterError):
            idx.query_many()
        with pytest.raises(TypeError):
            idx.query(signature="not a signature")
        with pytest.raises(TypeError):
            idx.query(signature=__import__("numpy").zeros((2, 2), dtype="uint64"))


def test_query_threshold_is_checked_as_everywhere(tmp_path: pathlib.Path) -> None:
    """A threshold is in (0, 1] for query, query_many and dedup, as for create and the CLI,
    with the same message."""
    with pytest.raises(mhdb.InvalidParameterError) as created:
        mhdb.Index.create(tmp_path / "zero", threshold=0)
    with mhdb.Index.create(tmp_path / "idx") as idx:
        idx.insert("a", TEXT)
        for call in (
            lambda t: idx.query(TEXT, threshold=t),
            lambda t: idx.query_many(texts=[TEXT], threshold=t),
            lambda t: idx.dedup(threshold=t),
        ):
            with pytest.raises(mhdb.InvalidParameterError) as e:
                call(0.0)
            assert e.value.parameter == "threshold"
            assert (
                str(e.value)
                == str(created.value)
                == "invalid parameter `threshold`: must be in (0, 1], got 0"
            )
            for bad in (-0.1, 1.5, float("nan")):
                with pytest.raises(mhdb.InvalidParameterError):
                    call(bad)
        assert idx.query(TEXT, threshold=1.0) == [("a", 1.0)]


def test_query_top_and_limit_exclude_each_other(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path) as idx:
        idx.insert_many([(f"d{i}", f"{TEXT} {i}") for i in range(5)])
        with pytest.raises(mhdb.InvalidParameterError) as e:
            idx.query(TEXT, top=3, limit=2)
        assert e.value.parameter == "limit" and "top=3" in str(e.value)
        with pytest.raises(mhdb.InvalidParameterError):
            idx.query_many(texts=[TEXT], top=3, limit=2)
        assert len(idx.query(TEXT, top=3)) == 3 and len(idx.query(TEXT, limit=2)) == 2


def test_bad_arguments_are_named(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path) as idx:
        # A bad text in a (key, text) pair: what was expected, where, and which key.
        with pytest.raises(TypeError) as e:
            idx.insert_many([("d", "hello there world"), ("e", 3)])
        assert str(e.value).startswith('items[1] (key "e"): expected a text (str) or a signature')
        assert str(e.value).endswith("not int")
        with pytest.raises(TypeError, match=r'^texts\[1\] \(key "e"\): expected a text'):
            idx.insert_many(["d", "e"], ["hello there world", 3.5])
        with pytest.raises(TypeError, match=r"^items\[1\]: a key must be str or bytes, not int"):
            idx.insert_many([("d", TEXT), (7, TEXT)])
        with pytest.raises(
            TypeError,
            match=r"^items\[0\]: expected a \(key, text\) or \(key, signature\) tuple, not list",
        ):
            idx.insert_many([["d", TEXT]])
        with pytest.raises(TypeError, match=r'^items\[0\] \(key "d"\): a signature must be'):
            idx.insert_many([("d", [1, -2])])
        # A key too long to store: named by its position before anything of its batch is signed.
        too_long = "k" * (mhdb.MAX_KEY_LEN + 1)
        with pytest.raises(mhdb.InvalidParameterError) as e:
            idx.insert_many([("d", TEXT), (too_long, TEXT)])
        assert e.value.parameter == "key"
        assert f"items[1]: is {mhdb.MAX_KEY_LEN + 1} bytes long" in str(e.value)
        # Counts below one: InvalidParameterError naming the parameter, not OverflowError
        # (and not an empty answer for 0, which `mhdb query --limit 0` refuses too).
        for name in ("limit", "top"):
            for bad in (-1, 0):
                with pytest.raises(mhdb.InvalidParameterError) as e:
                    idx.query(TEXT, **{name: bad})
                assert (
                    e.value.parameter == name
                    and f"positive integer (None for no bound), got {bad}" in str(e.value)
                )
                with pytest.raises(mhdb.InvalidParameterError):
                    idx.query_many(texts=[TEXT], **{name: bad})
            with pytest.raises(TypeError, match=f"^{name} must be an int, not float"):
                idx.query(TEXT, **{name: 1.5})
        # A text of the wrong type names the parameter.
        with pytest.raises(TypeError, match="^text must be a str, not int"):
            idx.query(123)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="^text must be a str, not int"):
            idx.insert("k", 123)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^texts\[1\] must be a str, not int"):
            list(idx.query_many(texts=[TEXT, 5]))  # type: ignore[list-item]
        # A signature of the wrong length: named by its position and key, nothing of its batch
        # committed (earlier batches are).
        good = idx.hasher.sketch(TEXT)
        with pytest.raises(mhdb.InvalidParameterError) as e:
            idx.insert_many([("a", good), ("b", good), ("c", good[:64])], commit_every=2)
        assert e.value.parameter == "signature"
        assert f'items[2] (key "c"): has 64 slots, the database stores {len(good)}' in str(e.value)
        assert sorted(idx.keys()) == ["a", "b"]
        with pytest.raises(
            mhdb.InvalidParameterError, match=r'`signature`: texts\[1\] \(key "y"\): has 3 slots'
        ):
            idx.insert_many(["x", "y"], [good, [1, 2, 3]])
        with pytest.raises(mhdb.InvalidParameterError, match=r'`signature`: key "k": has 64 slots'):
            idx.insert("k", signature=good[:64])
        assert sorted(idx.keys()) == ["a", "b"]


def test_parameter_mismatch_on_merge(tmp_path: pathlib.Path) -> None:
    mhdb.Index.create(tmp_path / "other", num_perm=64).close()
    with mhdb.Index.create(tmp_path / "idx") as idx:
        with pytest.raises(mhdb.ParameterMismatchError) as e:
            idx.merge([tmp_path / "other"])
    assert e.value.parameter == "num_perm" and e.value.stored == "512" and e.value.requested == "64"


def test_merge_refuses_the_index_itself_and_a_source_twice(tmp_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_path / "a") as a:
        a.insert("k", TEXT)
    with mhdb.Index.open(tmp_path / "a") as idx:
        with pytest.raises(mhdb.InvalidParameterError, match="is the destination itself"):
            idx.merge(tmp_path / "a")
        assert len(idx) == 1
    with mhdb.Index.create(tmp_path / "d") as dest:
        with pytest.raises(mhdb.InvalidParameterError, match="is the same database as"):
            dest.merge([tmp_path / "a", tmp_path / "a"])
        assert len(dest) == 0
        assert dest.merge([tmp_path / "a"]) == 1


def test_read_only(tmp_index_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_index_path) as idx:
        idx.insert("k", TEXT)
        assert idx.write_failure is None  # no I/O failure latched
    with mhdb.Index.open(tmp_index_path, read_only=True) as idx:
        for write in (
            lambda: idx.insert("k", TEXT),
            lambda: idx.insert_many([("k", TEXT)]),
            lambda: idx.delete("k"),
            lambda: idx.compact(),
        ):
            with pytest.raises(mhdb.ReadOnlyError):
                write()


def test_io_error(tmp_path: pathlib.Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(mhdb.IoError) as e:
        mhdb.Index.create(tmp_path / "file" / "idx")
    assert isinstance(e.value, OSError)
    assert e.value.path is not None and e.value.op and e.value.errno is not None


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_io_error_permission(tmp_path: pathlib.Path) -> None:
    locked = tmp_path / "ro"
    locked.mkdir(mode=0o500)
    with pytest.raises(mhdb.IoError):
        mhdb.Index.create(locked / "idx")


def test_closed(tmp_index_path: pathlib.Path) -> None:
    idx = mhdb.Index.create(tmp_index_path)
    idx.close()
    for call in (lambda: idx.query(TEXT), lambda: idx.insert("k", TEXT), lambda: idx.stats()):
        with pytest.raises(mhdb.Error, match="closed"):
            call()


def test_a_default_minhasher_signature_in_a_default_index_names_the_index_hasher(
    tmp_index_path: pathlib.Path,
) -> None:
    """``MinHasher()`` keeps datasketch's 128 slots; an index made with the defaults has 512,
    and the refusal says which hasher signs for it."""
    assert mhdb.MinHasher().num_perm == 128
    with mhdb.Index.create(str(tmp_index_path)) as idx:
        assert idx.hasher.num_perm == 512
        with pytest.raises(mhdb.InvalidParameterError) as e:
            idx.insert("a", signature=mhdb.MinHasher().sketch(TEXT))
        assert "has 128 slots, the database stores 512" in str(e.value)
        assert "Python `Index.hasher`)" in str(e.value)
        idx.insert("a", signature=idx.hasher.sketch(TEXT))
        assert idx.query(TEXT) == [("a", 1.0)]
