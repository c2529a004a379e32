"""Shared fixtures of the mhdb Python tests."""

from __future__ import annotations

import importlib
import os
import pathlib
import shutil
import subprocess
from types import ModuleType

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def import_or_skip(module: str) -> ModuleType:
    """`module`, imported; where it is missing the test is skipped, except under CI (the
    environment variable `CI` set, as CI services and `.ci/run` set it), where a test that
    would skip fails instead: CI installs every test dependency (`pip install './python[test]'`)
    and must run every such test."""
    if not os.environ.get("CI"):
        return pytest.importorskip(module)
    try:
        return importlib.import_module(module)
    except ImportError as e:
        pytest.fail(f"CI is set, and {module} is missing ({e}): pip install './python[test]'")


@pytest.fixture
def tmp_index_path(tmp_path: pathlib.Path) -> pathlib.Path:
    """A path where an index may be created."""
    return tmp_path / "idx"


def cli_binary() -> pathlib.Path:
    """The `mhdb` command-line tool: $MHDB_CLI, else target/release/mhdb (built if missing)."""
    env = os.environ.get("MHDB_CLI")
    if env:
        return pathlib.Path(env)
    binary = REPO / "target" / "release" / "mhdb"
    if not binary.exists():
        if shutil.which("cargo") is None:
            pytest.skip("no mhdb binary and no cargo to build it")
        subprocess.run(
            ["cargo", "build", "--release", "--bin", "mhdb"], cwd=REPO, check=True
        )
    return binary


@pytest.fixture(scope="session")
def cli() -> pathlib.Path:
    return cli_binary()
