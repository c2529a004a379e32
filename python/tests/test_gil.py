"""The GIL is released while mhdb works: a second Python thread makes progress during one
long call.

The method: the switch interval is raised to 1000 s, so the interpreter never takes the GIL
away from a thread that holds it; a second thread counts, sleeping 1 ms (without the GIL)
between counts. During a call that keeps the GIL the count cannot move (the control below
shows it); during a call that releases it, the count moves. The assertions are on counts,
never on durations.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import mhdb

WORDS = [f"word{i}" for i in range(5000)]


def text(i: int, words: int = 300) -> str:
    return " ".join(WORDS[(i * 7919 + j * 31) % len(WORDS)] for j in range(words))


@pytest.fixture
def counter() -> Iterator[Callable[[Callable[[], object]], int]]:
    """Runs a call and returns how many times the other thread counted during it."""
    count = [0]
    stop = threading.Event()

    def count_forever() -> None:
        while not stop.is_set():
            count[0] += 1
            time.sleep(0.001)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    thread = threading.Thread(target=count_forever, daemon=True)
    thread.start()
    try:

        def progress_during(call: Callable[[], object]) -> int:
            before = count[0]
            call()
            return count[0] - before

        yield progress_during
    finally:
        stop.set()
        sys.setswitchinterval(old)
        thread.join()


def busy_python() -> None:
    """Pure Python work that holds the GIL for about as long as the calls below take."""
    total = 0
    for i in range(3_000_000):
        total += i * i
    assert total


def test_control_a_call_holding_the_gil_lets_no_thread_run(
    counter: Callable[[Callable[[], object]], int],
) -> None:
    assert counter(busy_python) == 0


def test_sketch_many_releases_the_gil(counter: Callable[[Callable[[], object]], int]) -> None:
    hasher = mhdb.MinHasher(num_perm=256, scheme="kperm")
    texts = [text(i) for i in range(4000)]
    assert counter(busy_python) == 0
    assert counter(lambda: hasher.sketch_many(texts)) > 0


def test_insert_many_and_query_many_release_the_gil(
    counter: Callable[[Callable[[], object]], int], tmp_index_path
) -> None:
    with mhdb.Index.create(tmp_index_path, num_perm=256, scheme="kperm") as idx:
        docs = [(f"k{i}", text(i)) for i in range(4000)]
        assert counter(lambda: idx.insert_many(iter(docs), commit_every=1000)) > 0
        assert len(idx) == 4000
        texts = [t for _, t in docs]
        assert counter(lambda: list(idx.query_many(texts=texts))) > 0


def test_bbit_pack_and_estimate_release_the_gil(
    counter: Callable[[Callable[[], object]], int],
) -> None:
    rng = np.random.default_rng(1)
    sigs = rng.integers(0, 1 << 63, size=(20_000, 512), dtype=np.uint64)
    assert counter(busy_python) == 0
    assert counter(lambda: mhdb._mhdb.bbit_pack(sigs, 1)) > 0
    # 64-bit slots: the widest rows, so that the call lasts long enough to count.
    packed = mhdb._mhdb.bbit_pack(sigs, 64)
    other = np.roll(packed, 1, axis=0)
    assert counter(lambda: mhdb._mhdb.bbit_estimate(packed, other, 512, 64)) > 0
