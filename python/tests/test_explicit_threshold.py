"""`Index.create` tells an explicit ``threshold`` from the default: a simhash index refuses any
threshold given, 0.8 (the MinHash default) included; left out, a MinHash index is tuned for 0.8
(as ``mhdb create`` does, through the same library rules)."""

import pathlib

import pytest

import mhdb
from mhdb import _mhdb


@pytest.mark.parametrize("threshold", [0.8, 0.5])
def test_simhash_refuses_an_explicit_threshold(tmp_path: pathlib.Path, threshold: float) -> None:
    with pytest.raises(mhdb.InvalidParameterError) as e:
        mhdb.Index.create(tmp_path / "sim", threshold, kind="simhash")
    assert e.value.parameter == "threshold"
    assert "follows from max_hamming" in str(e.value)
    with pytest.raises(mhdb.InvalidParameterError):
        _mhdb.index_params_for(threshold=threshold, kind="simhash")


def test_the_default_threshold_is_the_libraries(tmp_path: pathlib.Path) -> None:
    with mhdb.Index.create(tmp_path / "sim", kind="simhash") as idx:
        assert idx.params["kind"] == "simhash"
    with mhdb.Index.create(tmp_path / "min") as idx:
        assert idx.params["threshold"] == 0.8
    assert _mhdb.index_params_for()["threshold"] == 0.8
    assert _mhdb.index_params_for(0.5)["threshold"] == 0.5
