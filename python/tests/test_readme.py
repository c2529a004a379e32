"""The README's Python examples run as written (in a fresh directory)."""

from __future__ import annotations

import os
import pathlib
import re

import pytest

from conftest import REPO


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


def test_migration_example(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("datasketch")
    run_in(tmp_path, example("python-migration"))
    assert "m1" in capsys.readouterr().out
