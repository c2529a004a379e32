"""Keyed indexes and format upgrades from Python: a keyed index signs text only under its key
(``key_file``, or ``MHDB_KEY_FILE``), a wrong key is refused, and a format-version-1 index
(the committed fixture) opens read-only and converts with ``Index.upgrade``."""

from __future__ import annotations

import pathlib
import shutil

import pytest

import mhdb

FIXTURE_V1 = pathlib.Path(__file__).resolve().parents[2] / "tests" / "golden" / "db-v1"
TEXT = "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat."


def test_keyed_index_needs_its_key(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MHDB_KEY_FILE", raising=False)
    key = tmp_path / "idx.key"
    key.write_text("5a" * 32 + "\n")
    other = tmp_path / "other.key"
    other.write_bytes(bytes(range(32)))
    path = tmp_path / "idx"
    with mhdb.Index.create(path, key_file=key) as idx:
        idx.insert("doc", text=TEXT)
        sig = idx.get("doc")
    with mhdb.Index.open(path, key_file=key) as idx:
        assert idx.query(text=TEXT)[0][0] == "doc"
    with mhdb.Index.open(path, read_only=True) as idx:
        with pytest.raises(mhdb.Error) as e:
            idx.query(text=TEXT)
        assert "MHDB_KEY_FILE" in str(e.value)
        assert idx.get("doc") is not None
    with pytest.raises(mhdb.Error):
        mhdb.Index.open(path, key_file=other)
    monkeypatch.setenv("MHDB_KEY_FILE", str(key))
    with mhdb.Index.open(path, read_only=True) as idx:
        assert idx.query(text=TEXT)[0][0] == "doc"
    assert sig is not None


def test_a_signature_is_refused_by_a_keyed_index_opened_without_its_key(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A signature computed elsewhere cannot be checked against the key: without the key the
    # index cannot tell a keyed signature from an unkeyed one, so it must not store it.
    monkeypatch.delenv("MHDB_KEY_FILE", raising=False)
    key = tmp_path / "idx.key"
    key.write_text("5a" * 32 + "\n")
    path = tmp_path / "idx"
    with mhdb.Index.create(path, key_file=key) as idx:
        idx.insert("doc", text=TEXT)
        sig = idx.get("doc")
    assert sig is not None
    with mhdb.Index.open(path) as idx:
        with pytest.raises(mhdb.Error) as e:
            idx.insert("copy", signature=sig)
        assert "key" in str(e.value).lower()
        assert idx.get("copy") is None


def test_version_1_index_upgrades(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "db"
    shutil.copytree(FIXTURE_V1, path)
    with mhdb.Index.open(path, read_only=True) as idx:
        before = {k: idx.get(k).tolist() for k in idx.keys()}
    with pytest.raises(mhdb.Error) as e:
        mhdb.Index.open(path)
    assert "mhdb upgrade" in str(e.value)
    assert mhdb.Index.upgrade(path) is True
    assert mhdb.Index.upgrade(path) is False
    with mhdb.Index.open(path) as idx:
        assert idx.stats()["live_docs"] == len(before)
        assert {k: idx.get(k).tolist() for k in idx.keys()} == before
