"""The README's Python examples run as written (in a fresh directory)."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

import mhdb
from conftest import REPO, import_or_skip


def example(marker: str) -> str:
    readme = (REPO / "README.md").read_text()
    found = re.search(rf"<!-- {marker} -->\n```python\n(.*?)```", readme, re.S)
    assert found, f"README.md has no python block after <!-- {marker} -->"
    return found.group(1)


def run_in(tmp_path: pathlib.Path, code: str) -> None:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)


def test_python_example(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_in(tmp_path, example("python-example"))
    out = capsys.readouterr().out
    assert "https://example.com/a" in out or "doc-" in out
    # Twice: the second run reopens the index it created.
    run_in(tmp_path, example("python-example"))
    assert "1001 True 1001" in capsys.readouterr().out


def test_migration_example(tmp_path: pathlib.Path) -> None:
    """Twice, each in a fresh interpreter as a user runs it: the example leaves its index open
    (as datasketch code would), and the second run finds the documents the first stored."""
    pytest.importorskip("datasketch")
    code = example("python-migration")
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert "m1" in done.stdout
    with mhdb.Index.open(tmp_path / "lsh-idx", read_only=True) as idx:
        assert len(idx) == 2


def test_insert_if_novel_example(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_in(tmp_path, example("python-novel"))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[]"
    assert lines[1].startswith("[('https://a.example/1', 0.9")
    assert lines[2] == "['c']"


def test_insert_arrow_example(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    import_or_skip("pyarrow")
    import_or_skip("polars")
    run_in(tmp_path, example("python-arrow"))
    assert capsys.readouterr().out.splitlines() == [
        "2",
        "2",
        "['17', '18', 'https://a.example/1', 'https://a.example/2']",
    ]
