"""A kill -9 of a Python process in the middle of `insert_many` loses no acknowledged
document.

The child inserts an endless stream of documents with `insert_many(..., on_commit=...)` and
prints the number of committed documents after each commit (those are acknowledged as
durable). The parent reads a few acknowledgements, kills the child with SIGKILL (usually in
the middle of a batch), reads the child's pipe to its end (acknowledgements printed before
the kill may still be buffered in the pipe), reopens the index and checks that every
acknowledged document is there. MHDB_KILL_ROUNDS sets the number of rounds (default 5).
"""

from __future__ import annotations

import os
import pathlib
import random
import signal
import subprocess
import sys

import mhdb

CHILD = r"""
import sys
import mhdb

def docs():
    i = 0
    while True:
        yield (f"k{i}", f"document {i}: " + " ".join(f"w{(i * 31 + j) % 997}" for j in range(60)))
        i += 1

idx = mhdb.Index.open_or_create(sys.argv[1])
idx.insert_many(docs(), commit_every=int(sys.argv[2]), on_commit=lambda n: print(n, flush=True))
"""


# Batches below 1,024 documents are committed through the WAL, larger ones as bulk inserts
# (a new segment): both paths are killed.
COMMIT_EVERY = [50, 200, 700, 1500]


def one_round(path: pathlib.Path, rng: random.Random, commit_every: int) -> int:
    wait_for = rng.randint(1, 4)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(commit_every)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    acknowledged = 0
    for _ in range(wait_for):
        line = child.stdout.readline()
        assert line, child.stderr.read() if child.stderr else "child ended"
        acknowledged = int(line)
    os.kill(child.pid, signal.SIGKILL)
    # Everything the child printed before it died counts: read the pipe to its end.
    for line in child.stdout:
        acknowledged = max(acknowledged, int(line))
    child.wait()
    assert child.returncode == -signal.SIGKILL
    with mhdb.Index.open(path) as idx:
        missing = [i for i in range(acknowledged) if f"k{i}" not in idx]
        assert missing == [], f"lost {len(missing)} acknowledged documents of {acknowledged}"
        assert len(idx) >= acknowledged
        assert idx.verify()["ok"]
    return acknowledged


def test_kill_9_mid_insert_many_loses_no_acknowledged_document(tmp_path: pathlib.Path) -> None:
    rounds = int(os.environ.get("MHDB_KILL_ROUNDS", "5"))
    rng = random.Random(13)
    for r in range(rounds):
        assert one_round(tmp_path / f"idx-{r}", rng, COMMIT_EVERY[r % len(COMMIT_EVERY)]) > 0
