#!/usr/bin/env python3
"""Corruption sweep: single mutations of every file kind of an mhdb database, and every command
run on each, classified against the answers of the undamaged database.

Six base databases in the current format (version 3), each holding every file kind:
  v3      tests/golden/db-v3 as committed: two segments with stored sets, a deletion list, a
          sealed WAL file and the newest as a crash leaves it (unsealed, ending in zeros);
  golden  tests/golden/db-v1 upgraded (`mhdb upgrade`: its WAL tail of inserts, upserts and
          deletes folded into a segment with hot buckets), then an `add` replacing stored keys
          (a second segment, a deletion list) and two `delete` runs (two sealed WAL files);
  built   built here with the CLI from samples/: two segments (the second replacing some
          documents of the first, so a deletion list), then two `mhdb delete` runs, which
          leave two WAL files;
  sets    tests/golden/db-v2-sets upgraded: an index with stored shingle sets (a SHINGLES
          section), then a `delete` run (a WAL file);
  sets-built  built like `built`, created with --store-sets;
  simhash-built  built like `built`, a SimHash index (--kind simhash --max-hamming 6);
snapshots taken on the way provide stale copies of files. `--bases golden-v1` sweeps the
version-1 fixture itself (its signatures.log included; writers refuse it, exit 1).

Mutations, one at a time, of every file (LOCK aside):
  flip      one bit at every structure: each header field, each section-table entry field,
            the first, middle and last byte of each section, record and WAL payload, footers
  byte      a byte set to another value at seeded random offsets
  splice    (WAL, versions 2 and 3) damage every checksum misses: a record (or the seal) removed
            whole, first_seq moved with the header CRC recomputed, a seal's count changed with
            its CRC recomputed; only the numbering and the seals can tell; in an index that
            stores sets, an insert's tag 3 made 1 and its set's count changed, the record's
            CRC recomputed
  reseal    (segments with SHINGLES) a stored set's offset table or coding broken against a
            rule of format/segment.md with every checksum recomputed: only the decoding can
            tell
  truncate  at every record boundary (WAL records, signature-log ranges, segment sections,
            deletion entries) and inside records, to 0 and to one byte short
  zeros     the last 1, 8, 64 or 4096 bytes zeroed; 4096 zeros appended
  delete    the file removed
  stale     the file replaced by the copy of the same name from an earlier snapshot, a file
            of a snapshot that is gone now brought back, or CURRENT and its manifest both
            rolled back together
  swap      (same kind) two files' contents exchanged

Files from elsewhere (`--siblings`, instead of the mutations above; CI runs 20 of them): bases
built by one fixed pipeline of CLI commands (sibling_bases, pipeline_base), and
  sibling   a file of a twin database (the same commands, the same ids, other texts) written
            over each segment, deletion list and WAL file of the same kind (same name or
            another), its manifest alone and with its CURRENT, its segments and deletion list
            together, and all its data files together
  shard     the same from two other shards of the pipeline (other ids of the same lengths)
  template  the same from a twin made with the same MHDB_TEST_IDENTITY (as databases copied
            from one template directory share one): a WAL file whose numbering fits passes
            (outcome shared-identity, the fault model's undetectable class, not a failure);
            every segment and deletion list must still be detected (the manifest's checksums)
  rollback  each older segment, deletion list or WAL file of the base's own history written
            over each current file of its kind: older files of other names, and older copies
            of the same name (a segment and deletion list left by a write cut off by a crash,
            whose ids the next write took again); never the newest WAL's older copy of itself
            (undetectable: the fault model)

For each mutation every command runs on its own copy: query, get, keys, dedup, stats and
verify (read-only), add, compact and export (writers; their result is read back: keys, get,
query, verify). Each (command, mutation) is classified:

  correct            the same answer (exit code and output) as the undamaged database
  detected           exit 3 with `corruption in FILE at byte offset N` (naming the damaged
                     file; `detected-elsewhere` when it names another one)
  detected-after-write  (add, compact, export) exit 0, and the reads and verify of its result
                     report the damaged file with exit 3: the writer did not need the damaged
                     bytes (an add writes a new segment beside them) and did not launder them
  torn-tail-boundary the answer of the database with its newest WAL cut at a record boundary
                     (inside its header, or removed, or replaced by an older copy of itself):
                     records removed whole, which no reader can tell from writes never made
                     (the fault model's undetectable class)
  torn-tail-reported the answer of such a cut, though the damage was not a whole-record cut,
                     and the command said so on stderr (a writer keeps the bytes in
                     wal-<id>.log.torn-<offset>; a reader warns; verify exits 3): a record torn
                     by a crash and damage to the last acknowledged one look the same
  torn-tail-damage   the same without a word: damage read as a torn tail, silently
  other-exit         another non-zero exit (for instance exit 1 on an unknown version)
  rolled-back        the answer differs, but the mutation rolled CURRENT and its manifest back
                     together to an older consistent pair: undetectable without an outside
                     witness (the fault model's other undetectable class)
  shared-identity    the answer differs, but the mutation only moved WAL files between two
                     databases of one identity (family template): undetectable (fault model)
  silent-wrong       exit 0 (or get's 1 for "absent") with a different answer; for verify:
                     "ok" while another command answered wrongly
  crash              a panic (exit 101) or a signal
  hang               no end within --timeout seconds

It prints the counts per command and per file kind, and exits 1 if any silent wrong answer
(torn-tail-damage included), crash or hang occurred; --allow-silent permits silent wrong
answers (format version 1 is known to have them) but never crashes or hangs.

    cargo build --release && python3 tools/reliability/corruption_sweep.py      # everything
    python3 tools/reliability/corruption_sweep.py --limit 40                     # CI's short run
    python3 tools/reliability/corruption_sweep.py --details /tmp/sweep.jsonl     # every outcome
    python3 tools/reliability/corruption_sweep.py --siblings                     # files from elsewhere

Python 3 standard library only.
"""

import argparse
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
READS = ["query", "get", "keys", "dedup", "stats", "verify"]
WRITES = ["add", "compact", "export"]
COMMANDS = ["query", "get", "keys", "dedup", "stats", "add", "compact", "export", "verify"]
OUTCOMES = [
    "correct",
    "detected",
    "detected-elsewhere",
    "detected-after-write",
    "torn-tail-boundary",
    "torn-tail-reported",
    "torn-tail-damage",
    "other-exit",
    "rolled-back",
    "shared-identity",
    "silent-wrong",
    "crash",
    "hang",
]
FAILING = {"silent-wrong", "torn-tail-damage", "crash", "hang"}
CORRUPTION = re.compile(r"corruption in (\S+) at byte offset (\d+)")
# A writer's recovery that kept a torn tail, or a reader that read past one, says so.
TORN_REPORTED = re.compile(r"recovery cut \d+ bytes that were not a whole record|that are not a whole record \(a write torn")
GET_ABSENT = re.compile(r"mhdb: \d+ of \d+ keys? absent")


# ---------------------------------------------------------------------------------------------
# Running mhdb


class Runner:
    def __init__(self, mhdb, timeout, env=None):
        self.mhdb = mhdb
        self.timeout = timeout
        self.env = env  # None: this process's environment

    def run(self, args, stdin=None):
        """(returncode, stdout, stderr); returncode None on a timeout."""
        try:
            p = subprocess.run(
                [self.mhdb] + args,
                input=stdin,
                capture_output=True,
                timeout=self.timeout,
                env=self.env,
            )
        except subprocess.TimeoutExpired:
            return None, b"", b"timeout"
        return p.returncode, p.stdout, p.stderr


def normalize(cmd, out, paths):
    text = out.decode("utf-8", "replace")
    for p, name in paths:
        text = text.replace(p, name)
    if cmd in ("keys", "dedup"):
        return "\n".join(sorted(text.splitlines()))
    if cmd == "stats":
        try:
            value = json.loads(text)
        except ValueError:
            return text
        value.pop("bytes", None)
        return json.dumps(value, sort_keys=True)
    return text


class Base:
    """A base database and what every command answers on it."""

    def __init__(self, name, path, queries, get_keys, add_input):
        self.name = name
        self.path = path
        self.queries = queries  # a JSONL file
        self.get_keys = get_keys
        self.add_input = add_input  # a JSONL file
        self.snapshots = []  # older copies (for stale files)
        self.baseline = None
        self.prefix_baselines = []  # (records kept, answers) for cuts of the newest WAL
        self.newest_wal = None
        self.wal_boundaries = []
        self.donors = []  # (family, path) of databases its files come from (--siblings)


def fingerprint(runner, base, db):
    """What a writer's result holds, read back with the read commands, and whether `verify`
    passes on it."""
    keys = runner.run(["keys", db])
    get = runner.run(["get", db, "--json"] + base.get_keys)
    query = runner.run(["query", db, "--jsonl", base.queries, "--json"])
    verify = runner.run(["verify", db])
    paths = [(db, "DB")]
    reads = "\n--\n".join(
        [
            f"{keys[0]}:{normalize('keys', keys[1], paths)}",
            f"{get[0]}:{normalize('get', get[1], paths)}",
            f"{query[0]}:{normalize('query', query[1], paths)}",
        ]
    )
    # What the reads of the result reported as corruption (the files they named).
    named = set()
    for rc, _, err in (keys, get, query, verify):
        m = CORRUPTION.search(err.decode("utf-8", "replace"))
        if rc == 3 and m:
            named.add(os.path.basename(m.group(1)))
    return reads, verify[0] == 0, named


def run_command(runner, base, cmd, db, scratch):
    """(returncode, stderr, answer, verified) of `cmd` on the database in `db` (which a writer
    changes): a writer's answer includes what its result reads back, and `verified` says
    whether `verify` passes on that result (None for the read commands)."""
    paths = [(db, "DB")]
    if cmd == "query":
        rc, out, err = runner.run(["query", db, "--jsonl", base.queries, "--json"])
    elif cmd == "get":
        rc, out, err = runner.run(["get", db, "--json"] + base.get_keys)
    elif cmd == "keys":
        rc, out, err = runner.run(["keys", db])
    elif cmd == "dedup":
        rc, out, err = runner.run(["dedup", db, "--format", "pairs"])
    elif cmd == "stats":
        rc, out, err = runner.run(["stats", db, "--json"])
    elif cmd == "verify":
        rc, out, err = runner.run(["verify", db])
    elif cmd == "add":
        rc, out, err = runner.run(["add", db, base.add_input, "--json", "--commit-every", "2"])
    elif cmd == "compact":
        rc, out, err = runner.run(["compact", db])
    elif cmd == "export":
        dest = os.path.join(scratch, "export")
        rc, out, err = runner.run(["export", db, dest])
        paths.append((dest, "DEST"))
    else:
        raise ValueError(cmd)
    answer = normalize(cmd, out, paths)
    verified = None
    if rc == 0 and cmd in WRITES:
        result = os.path.join(scratch, "export") if cmd == "export" else db
        reads, ok, named = fingerprint(runner, base, result)
        verified = (ok, named)
        answer += "\n==\n" + reads
    return rc, err.decode("utf-8", "replace"), answer, verified


def answers(runner, base, db_dir, scratch):
    """Every command on its own copy of `db_dir`: {cmd: (rc, stderr, answer)}."""
    out = {}
    ro = os.path.join(scratch, "ro")
    shutil.copytree(db_dir, ro)
    for cmd in READS:
        out[cmd] = run_command(runner, base, cmd, ro, scratch)
    for cmd in WRITES:
        d = os.path.join(scratch, "w-" + cmd)
        shutil.copytree(db_dir, d)
        out[cmd] = run_command(runner, base, cmd, d, scratch)
        shutil.rmtree(d)
        shutil.rmtree(os.path.join(scratch, "export"), ignore_errors=True)
    shutil.rmtree(ro)
    return out


# ---------------------------------------------------------------------------------------------
# Building the bases


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def must(runner, args):
    rc, out, err = runner.run(args)
    if rc != 0:
        sys.exit(f"corruption_sweep: mhdb {' '.join(args)} failed ({rc}): {err.decode()}")
    return out


def golden_base(runner, work, upgrade=True):
    """tests/golden/db-v1; upgraded to the current format (unless `upgrade` is false: the
    version-1 fixture itself, which writers refuse), then an add that replaces stored keys (a
    second segment, a deletion list) and two deletes (two sealed WAL files)."""
    name = "golden" if upgrade else "golden-v1"
    path = os.path.join(work, name)
    shutil.copytree(os.path.join(ROOT, "tests", "golden", "db-v1"), path)
    expected = json.load(open(os.path.join(ROOT, "tests", "golden", "db-v1.expected.json")))
    queries = os.path.join(work, f"{name}-queries.jsonl")
    write_jsonl(queries, [{"id": f"q{i}", "text": q["text"]} for i, q in enumerate(expected["queries"])])
    live = sorted(d["key"] for d in expected["live"])
    keys = live[::9] + list(expected["deleted"])[:6] + [r["key"] for r in expected["replaced"]][:4]
    keys += ["absent-key"]
    add_input = os.path.join(work, f"{name}-add.jsonl")
    write_jsonl(
        add_input,
        [
            {"id": "sweep-new-1", "text": "A brand new document about the harbour festival and its lanterns."},
            {"id": live[3], "text": "A replacement text for a stored key, about quiet gardens and clocks."},
            {"id": "sweep-new-2", "text": expected["queries"][0]["text"]},
        ],
    )
    base = Base(name, path, queries, keys, add_input)
    if not upgrade:
        return base
    must(runner, ["upgrade", path])
    snaps = []

    def snapshot():
        snap = os.path.join(work, f"{name}-snap{len(snaps)}")
        shutil.copytree(path, snap)
        snaps.append(snap)

    snapshot()
    texts = {q["text"] for q in expected["queries"]}
    upserts = [{"id": k, "text": f"Golden sweep replacement {i}: " + next(iter(sorted(texts)))} for i, k in enumerate(live[10:16])]
    upserts += [{"id": f"golden-sweep-{i}", "text": q["text"] + " (again)"} for i, q in enumerate(expected["queries"][:4])]
    f = os.path.join(work, f"{name}-upserts.jsonl")
    write_jsonl(f, upserts)
    must(runner, ["add", path, f])
    snapshot()
    must(runner, ["delete", path] + live[20:24] + ["absent-1"])
    snapshot()
    must(runner, ["delete", path] + live[30:32] + [live[11]])
    base.snapshots = snaps
    return base


def built_base(runner, work, name="built", store_sets=False, simhash=False):
    """Built from samples/ with the CLI: two adds (two segments, the second replacing some
    documents of the first, so a deletion list), then two deletes (two WAL files); with
    `store_sets`, the index stores shingle sets (`--store-sets`, SHINGLES sections); with
    `simhash`, it is a SimHash index (`--kind simhash`: 8-byte fingerprints as signatures,
    the pigeonhole blocks as bands)."""
    corpus = read_jsonl(os.path.join(ROOT, "samples", "corpus.jsonl"))
    path = os.path.join(work, name)
    if simhash:
        flags = ["--kind", "simhash", "--max-hamming", "6", "--bucket-cap", "3"]
    else:
        flags = ["--perms", "64", "--bits", "8", "--threshold", "0.6", "--bucket-cap", "3"]
        flags += ["--store-sets"] if store_sets else []
    must(runner, ["create", path] + flags)
    p1 = corpus[:80]
    p2 = corpus[80:150] + [{"id": d["id"], "text": corpus[200 + i]["text"]} for i, d in enumerate(p1[:12])]
    snaps = []
    for i, part in enumerate([p1, p2]):
        f = os.path.join(work, f"{name}-part{i}.jsonl")
        write_jsonl(f, part)
        must(runner, ["add", path, f])
        snap = os.path.join(work, f"{name}-snap{i}")
        shutil.copytree(path, snap)
        snaps.append(snap)
    must(runner, ["delete", path] + [d["id"] for d in p1[20:26]] + ["absent-1"])
    snap = os.path.join(work, f"{name}-snap2")
    shutil.copytree(path, snap)
    snaps.append(snap)
    must(runner, ["delete", path] + [d["id"] for d in p2[5:8]] + [p1[40]["id"]])
    queries = os.path.join(work, f"{name}-queries.jsonl")
    write_jsonl(queries, read_jsonl(os.path.join(ROOT, "samples", "queries.jsonl"))[:12])
    ids = [d["id"] for d in corpus[:150]]
    keys = ids[::7] + [d["id"] for d in p1[20:26]] + [p1[40]["id"], p1[3]["id"], "absent-key"]
    add_input = os.path.join(work, f"{name}-add.jsonl")
    write_jsonl(
        add_input,
        [
            {"id": "sweep-new-1", "text": corpus[300]["text"]},
            {"id": p1[5]["id"], "text": corpus[301]["text"]},
            {"id": "sweep-new-2", "text": corpus[302]["text"]},
        ],
    )
    base = Base(name, path, queries, keys, add_input)
    base.snapshots = snaps
    return base


def sets_base(runner, work):
    """tests/golden/db-v2-sets upgraded to the current format (version 2 is read-only): an index
    that stores shingle sets, its live documents in one segment with a SHINGLES section, then
    a `delete` run (a WAL file). (The built sets base has stale copies and more files.)"""
    name = "sets"
    path = os.path.join(work, name)
    shutil.copytree(os.path.join(ROOT, "tests", "golden", "db-v2-sets"), path)
    must(runner, ["upgrade", path])
    expected = json.load(open(os.path.join(ROOT, "tests", "golden", "db-v2-sets.expected.json")))
    doomed = sorted(d["key"] for d in expected["live"])[1::23][:2]
    must(runner, ["delete", path] + doomed)
    expected["live"] = [d for d in expected["live"] if d["key"] not in doomed]
    return fixture_base(work, name, path, expected, 11, 7)


def fixture_base(work, name, path, expected, every_text, every_key):
    """A base of a committed fixture at `path`, what it holds recorded in `expected` (its
    expected.json): queries with the recorded ones and every `every_text`-th live text, gets
    of every `every_key`-th live key and some deleted ones, and an add that replaces a key."""
    queries = os.path.join(work, f"{name}-queries.jsonl")
    texts = [q["text"] for q in expected["queries"]] + [e["text"] for e in expected["live"][::every_text]]
    write_jsonl(queries, [{"id": f"q{i}", "text": t} for i, t in enumerate(texts)])
    live = sorted(d["key"] for d in expected["live"])
    keys = live[::every_key] + list(expected["deleted"])[:4] + ["absent-key"]
    add_input = os.path.join(work, f"{name}-add.jsonl")
    write_jsonl(
        add_input,
        [
            {"id": "sweep-new-1", "text": "A brand new document about the harbour festival and its lanterns."},
            {"id": live[3], "text": "A replacement text for a stored key, about quiet gardens and clocks."},
            {"id": "sweep-new-2", "text": expected["queries"][0]["text"]},
        ],
    )
    return Base(name, path, queries, keys, add_input)


# ---------------------------------------------------------------------------------------------
# Structure of each file kind: (offset, what) points, and record boundaries


def u32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def u64(b, o):
    return struct.unpack_from("<Q", b, o)[0]


def fields(points, base, spec, prefix=""):
    """Adds the first (and, for wider fields, the last) byte of each (name, offset, size)."""
    for name, off, size in spec:
        points.append((base + off, f"{prefix}{name}"))
        if size > 1:
            points.append((base + off + size - 1, f"{prefix}{name} (last byte)"))


def spans(points, start, length, what):
    """First, middle and last byte of a region."""
    if length <= 0:
        return
    for off, where in [(0, "first"), (length // 2, "middle"), (length - 1, "last")]:
        points.append((start + off, f"{what} {where} byte"))


def manifest_v3_state(data):
    """Offset P of a version-3 manifest's state (next_docno), past its bandings and keep field."""
    return 126 + 24 * (data[124] | data[125] << 8) + data[91]


def manifest_info(data):
    """Version, segments (id, base, span, file_len), the deletion list id and the parameters
    the other files' layouts depend on, for a manifest of version 1, 2 or 3
    (format/manifest.md)."""
    version = u32(data, 8)
    if version == 3:
        p = manifest_v3_state(data)
        n, o, entry = u32(data, p + 60), p + 64, 44
        info = {"num_perm": u32(data, 52), "bits": data[51], "del_id": u64(data, p + 32),
                "siglog_records": 0, "wal_start": u64(data, p + 8), "wal_next_seq": u64(data, p + 16),
                "bands": u32(data, 126), "store_sets": data[36] & 1 == 1}
    elif version == 1:
        n, o, entry = u32(data, 117), 121, 44
        info = {"num_perm": u32(data, 25), "bits": data[40], "del_id": u64(data, 93),
                "siglog_records": u64(data, 69), "wal_start": u64(data, 77), "wal_next_seq": None}
    else:
        n, o, entry = u32(data, 157), 161, 40
        info = {"num_perm": u32(data, 26), "bits": data[45], "del_id": u64(data, 133),
                "siglog_records": 0, "wal_start": u64(data, 109), "wal_next_seq": u64(data, 117),
                "bands": u32(data, 46), "store_sets": data[66] == 1}
    info["version"] = version
    info["segments"] = [
        (u64(data, o + entry * i), u64(data, o + entry * i + 8), u64(data, o + entry * i + 16), u64(data, o + entry * i + 32))
        for i in range(n)
        if o + entry * (i + 1) <= len(data)
    ]
    return info


# Manifest fields (name, offset, size) up to the segment count, and the segment entry fields.
MANIFEST_V1 = [
    ("magic", 0, 8), ("version", 8, 4), ("generation", 12, 8), ("spec_version", 20, 4),
    ("scheme", 24, 1), ("num_perm", 25, 4), ("seed", 29, 8), ("shingle_kind", 37, 1),
    ("shingle_width", 38, 1), ("shingle_flags", 39, 1), ("bits", 40, 1), ("bands", 41, 4),
    ("rows", 45, 4), ("threshold", 49, 8), ("bucket_cap", 57, 4), ("next_docno", 61, 8),
    ("siglog_records", 69, 8), ("wal_start", 77, 8), ("next_file_id", 85, 8), ("del_id", 93, 8),
    ("del_count", 101, 8), ("del_len", 109, 8), ("segment_count", 117, 4),
]
MANIFEST_V2 = [
    ("magic", 0, 8), ("version", 8, 4), ("generation", 12, 8), ("spec_version", 20, 4),
    ("kind", 24, 1), ("scheme", 25, 1), ("num_perm", 26, 4), ("band_slots", 30, 4),
    ("seed", 34, 8), ("shingle_kind", 42, 1), ("shingle_width", 43, 1), ("shingle_flags", 44, 1),
    ("bits", 45, 1), ("bands", 46, 4), ("rows", 50, 4), ("threshold", 54, 8),
    ("bucket_cap", 62, 4), ("store_sets", 66, 1), ("key_fingerprint", 67, 32),
    ("max_hamming", 99, 1), ("weighting", 100, 1), ("next_docno", 101, 8), ("wal_start", 109, 8),
    ("wal_next_seq", 117, 8), ("next_file_id", 125, 8), ("del_id", 133, 8),
    ("del_count", 141, 8), ("del_len", 149, 8), ("segment_count", 157, 4),
]
MANIFEST_V3 = [
    ("magic", 0, 8), ("version", 8, 4), ("generation", 12, 8), ("db_id", 20, 16), ("features", 36, 8),
    ("spec_version", 44, 4), ("kind", 48, 1), ("scheme", 49, 1), ("metric", 50, 1), ("bits", 51, 1),
    ("num_perm", 52, 4), ("band_slots", 56, 4), ("seed", 60, 8), ("shingle_kind", 68, 1),
    ("shingle_width", 69, 1), ("shingle_flags", 70, 2), ("unicode_version", 72, 4),
    ("threshold", 76, 8), ("bucket_cap", 84, 4), ("max_hamming", 88, 1), ("weighting", 89, 1),
    ("keep_type", 90, 1), ("keep_field_len", 91, 1), ("key_fingerprint", 92, 32),
    ("banding_count", 124, 2), ("bands", 126, 4), ("rows", 130, 4), ("size_lo", 134, 8), ("size_hi", 142, 8),
]
MANIFEST_V3_STATE = [
    ("next_docno", 0, 8), ("wal_start", 8, 8), ("wal_next_seq", 16, 8), ("next_file_id", 24, 8),
    ("del_id", 32, 8), ("del_count", 40, 8), ("del_len", 48, 8), ("del_crc", 56, 4), ("segment_count", 60, 4),
]
SEGMENT_ENTRY = [("id", 0, 8), ("base", 8, 8), ("span", 16, 8), ("docs", 24, 8), ("file_len", 32, 8)]
SECTION_KINDS = {1: "KEY_BLOB", 2: "DOC_TABLE", 3: "KEY_INDEX", 4: "BAND", 5: "HOT", 6: "SIGNATURES", 7: "SHINGLES", 8: "CHECKSUMS"}
BLOCK = 4096  # bytes per block CRC of a version-2 segment


def wal_header_len(data):
    """52 for a version-3 WAL file (magic, version, flags, db_id, file_id, first_seq, crc), 24
    for version 2 (magic, version, first_seq, crc), 16 for version 1."""
    version = u32(data, 8) if len(data) >= 12 else 1
    return {3: 52, 2: 24}.get(version, 16)


def wal_first_seq_at(data):
    """Offset of a version-2 or version-3 WAL header's first_seq."""
    return 40 if wal_header_len(data) == 52 else 12


def wal_record_crc(data, covered):
    """A record's CRC: version 3 seeds it with the header's db_id and file_id."""
    seed = bytes(data[16:40]) if wal_header_len(data) == 52 else b""
    return zlib.crc32(seed + bytes(covered))


def segment_header_len(data):
    """96 for a version-3 segment (identity and file number in the header), else 64."""
    return 96 if len(data) >= 12 and u32(data, 8) == 3 else 64


def wal_records(data):
    """(start, end, type) of each valid-looking record, by the lengths (no checksum check):
    type 1 a batch, type 2 (version 2) a seal."""
    out = []
    pos = wal_header_len(data)
    while pos + 17 <= len(data):
        length, kind = u32(data, pos + 4), data[pos + 8]
        if kind not in (1, 2) or pos + 17 + length > len(data):
            break
        out.append((pos, pos + 17 + length, kind))
        pos += 17 + length
    return out


def segment_sections(data):
    """(entry offset, kind, index, offset, length, count) of each section-table entry."""
    n = len(data)
    if n < 96:
        return []
    table, count = u64(data, n - 32), u32(data, n - 24)
    out = []
    for i in range(count):
        e = table + 40 * i
        if e + 40 > n - 32:
            break
        out.append((e, data[e] | data[e + 1] << 8, u32(data, e + 4), u64(data, e + 8), u64(data, e + 16), u64(data, e + 24)))
    return out


def wal_prefix_of(mutated, original):
    """Whether `mutated` holds a proper prefix of `original`'s batch records (byte for byte),
    optionally sealed, and nothing else but zeros: what removing records whole from the end of
    a WAL file gives, which no reader can tell from writes never made."""
    h = wal_header_len(original)
    if len(mutated) < h:
        # Cut inside its header: an empty log (a file cut off while being created), as if
        # the whole file were removed.
        return mutated == original[: len(mutated)] or not any(mutated)
    if mutated[:h] != original[:h]:
        return False
    batches = [original[s:e] for s, e, k in wal_records(original) if k == 1]
    recs = wal_records(mutated)
    kept = [mutated[s:e] for s, e, k in recs if k == 1]
    end = recs[-1][1] if recs else h
    if any(mutated[end:]) or kept != batches[: len(kept)] or len(kept) >= len(batches):
        return False
    seals = [(s, e) for s, e, k in recs if k == 2]
    if seals:
        # A seal must be the last record and count what the file keeps.
        s, e = seals[0]
        return len(seals) == 1 and e == end and u64(mutated, s + 17) == len(kept)
    return True


def structure(name, data, info):
    """(points, boundaries): offsets of every structure, and record boundaries."""
    points, bounds = [], []
    n = len(data)
    if name == "CURRENT":
        fields(points, 0, [("magic", 0, 8), ("version", 8, 4), ("generation", 12, 8), ("manifest_len", 20, 8), ("manifest_crc", 28, 4), ("crc", 32, 4)])
        bounds = [8, 12, 20, 28, 32]
    elif name.startswith("MANIFEST-") and info["version"] == 3:
        fields(points, 0, MANIFEST_V3)
        p = manifest_v3_state(data)
        fields(points, p, MANIFEST_V3_STATE)
        first, entry = p + 64, 44
        for i in range((n - first - 4) // entry):
            fields(points, first + entry * i, SEGMENT_ENTRY + [("meta_crc", 40, 4)], f"segment entry {i} ")
            bounds.append(first + entry * i)
        fields(points, n - 4, [("crc", 0, 4)])
        bounds += [20, 44, p, first, n - 4]
    elif name.startswith("MANIFEST-"):
        v1 = info["version"] == 1
        spec = MANIFEST_V1 if v1 else MANIFEST_V2
        fields(points, 0, spec)
        first, entry = (121, 44) if v1 else (161, 40)
        for i in range((n - first - 4) // entry):
            e_spec = SEGMENT_ENTRY + ([("siglog_crc", 40, 4)] if v1 else [])
            fields(points, first + entry * i, e_spec, f"segment entry {i} ")
            bounds.append(first + entry * i)
        fields(points, n - 4, [("crc", 0, 4)])
        bounds += [20, spec[-1][1], first, n - 4]
    elif name.startswith("del-"):
        v2 = n >= 12 and u32(data, 8) == 2
        if v2:
            fields(points, 0, [("magic", 0, 8), ("version", 8, 4), ("flags", 12, 4), ("db_id", 16, 16), ("file_id", 32, 8), ("count", 40, 8)])
        else:
            fields(points, 0, [("magic", 0, 8), ("version", 8, 4), ("count", 12, 8)])
        first = 48 if v2 else 20
        count = (n - first - 4) // 8
        for i in sorted({0, count // 2, count - 1}):
            if 0 <= i < count:
                fields(points, first + 8 * i, [(f"entry {i}", 0, 8)])
        fields(points, n - 4, [("crc", 0, 4)])
        bounds = [first + 8 * i for i in range(count + 1)]
    elif name == "signatures.log":
        fields(points, 0, [("magic", 0, 8), ("version", 8, 4), ("num_perm", 12, 4), ("bits", 16, 4), ("record_bytes", 20, 4), ("crc", 24, 4)])
        spans(points, 28, 36, "header padding")
        rb = (info["num_perm"] * info["bits"] + 7) // 8
        for sid, base, span, _ in info["segments"]:
            for d in sorted({base, base + span // 2, base + span - 1}):
                spans(points, 64 + d * rb, rb, f"record {d} (segment {sid:x})")
            bounds += [64 + base * rb, 64 + (base + span) * rb]
        zero = next((d for d in range(info["siglog_records"]) if not any(data[64 + d * rb : 64 + (d + 1) * rb])), None)
        if zero is not None:
            spans(points, 64 + zero * rb, rb, f"zero record {zero}")
        bounds += [64 + rb // 2, n - rb // 2]
    elif name.endswith(".seg"):
        v2 = n >= 12 and u32(data, 8) in (2, 3)
        hdr = segment_header_len(data)
        header = [("magic", 0, 8), ("version", 8, 4), ("flags", 12, 4), ("num_bands", 16, 4), ("bucket_cap", 20, 4), ("base_docno", 24, 8), ("span", 32, 8), ("doc_count", 40, 8)]
        if hdr == 96:
            header += [("record_bytes", 48, 4), ("reserved", 52, 4), ("db_id", 56, 16), ("file_id", 72, 8), ("reserved", 80, 16)]
        else:
            header += [("record_bytes", 48, 4), ("reserved", 52, 12)] if v2 else [("reserved", 48, 16)]
        fields(points, 0, header)
        sections = segment_sections(data)
        record_bytes = u32(data, 48) if v2 and n >= 52 else 0
        for i, (e, kind, index, off, length, count) in enumerate(sections):
            label = f"{SECTION_KINDS.get(kind, kind)}{' ' + str(index) if kind == 4 else ''}"
            spec = [("crc", 32, 4), ("offset", 8, 8)]
            if i < 4 or i >= len(sections) - 5:
                spec = [("kind", 0, 2), ("width_a", 2, 1), ("width_b", 3, 1), ("index", 4, 4), ("offset", 8, 8), ("len", 16, 8), ("count", 24, 8), ("crc", 32, 4), ("reserved", 36, 4)]
            fields(points, e, spec, f"section entry {label} ")
            if off + length > n:
                continue
            spans(points, off, length, f"section {label}")
            bounds += [off, off + length // 2]
            if kind == 6 and record_bytes:
                # Each stored signature: the first, a middle and the last document's row.
                for row in sorted({0, count // 2, count - 1}):
                    if 0 <= row < count:
                        spans(points, off + row * record_bytes, record_bytes, f"signature of ordinal {row}")
                        bounds.append(off + row * record_bytes + record_bytes // 2)
            if kind == 7 and length >= 8 * (count + 1):
                # Stored shingle sets: the offset table's first, middle and last entries, and
                # the first, a middle and the last byte of the first, a middle and the last set.
                table = 8 * (count + 1)
                for i in sorted({0, 1, count // 2, count}):
                    fields(points, off + 8 * i, [(f"offset {i}", 0, 8)], "SHINGLES ")
                for row in sorted({0, count // 2, count - 1}):
                    if 0 <= row < count:
                        lo, hi = u64(data, off + 8 * row), u64(data, off + 8 * row + 8)
                        if lo <= hi <= length - table:
                            spans(points, off + table + lo, hi - lo, f"shingle set of ordinal {row}")
                            bounds.append(off + table + lo + (hi - lo) // 2)
            if kind == 8:
                # Each block CRC, and (below) a byte of every block it covers.
                for j in range(count):
                    fields(points, off + 4 * j, [(f"CRC of block {j}", 0, 4)], "CHECKSUMS ")
        if v2 and sections:
            checked_end = next((off for _, kind, _, off, _, _ in sections if kind == 8), hdr)
            for j, start in enumerate(range(hdr, checked_end, BLOCK)):
                end = min(start + BLOCK, checked_end)
                points.append((start + (end - start) // 3, f"inside block {j}"))
                bounds.append(start)
        if sections:
            bounds += [u64(data, n - 32), n - 32]
        if n >= 96:
            fields(points, n - 32, [("section_table_offset", 0, 8), ("num_sections", 8, 4), ("reserved", 12, 4), ("file_len", 16, 8), ("meta_crc", 24, 4), ("magic", 28, 4)], "footer ")
    elif name.startswith("wal-"):
        h = wal_header_len(data)
        if h == 52:
            fields(points, 0, [("magic", 0, 8), ("version", 8, 4), ("flags", 12, 4), ("db_id", 16, 16), ("file_id", 32, 8), ("first_seq", 40, 8), ("crc", 48, 4)])
        elif h == 24:
            fields(points, 0, [("magic", 0, 8), ("version", 8, 4), ("first_seq", 12, 8), ("crc", 20, 4)])
        else:
            fields(points, 0, [("magic", 0, 8), ("version", 8, 4), ("crc", 12, 4)])
        bounds = [h, 12]
        for i, (s, e, kind) in enumerate(wal_records(data)):
            what = "seal" if kind == 2 else f"record {i}"
            fields(points, s, [("crc", 0, 4), ("length", 4, 4), ("type", 8, 1), ("sequence", 9, 8)], f"{what} ")
            if kind == 2:
                fields(points, s + 17, [("batch count", 0, 8)], f"{what} ")
            else:
                spans(points, s + 17, e - s - 17, f"{what} payload")
            bounds += [s, e, s + 9, s + 17 + (e - s - 17) // 2]
    points = [(o, w) for o, w in points if 0 <= o < n]
    bounds = sorted({b for b in bounds if 0 <= b < n})
    return points, bounds


def kind_of(name):
    if name == "CURRENT":
        return "CURRENT"
    for prefix, kind in [("MANIFEST-", "manifest"), ("del-", "deletion list"), ("seg-", "segment"), ("wal-", "WAL")]:
        if name.startswith(prefix):
            return kind
    if name == "signatures.log":
        return "signature log"
    return name


# ---------------------------------------------------------------------------------------------
# Mutations


def cuts_newest_wal(base, data, ops):
    """Whether `ops` leave the newest WAL holding a proper prefix of its batch records (sealed
    or not) and nothing else: records removed whole from its end."""
    written = [op for op in ops if op[1] == base.newest_wal]
    return bool(written) and all(op[0] == "delete" or wal_prefix_of(op[2], data[base.newest_wal]) for op in written)


def mutations(base, rng):
    """Every mutation of `base`: dicts with base, file, kind, what, ops, boundary_cut."""
    files = sorted(f for f in os.listdir(base.path) if f != "LOCK")
    data = {f: open(os.path.join(base.path, f), "rb").read() for f in files}
    current = data["CURRENT"]
    manifest_name = f"MANIFEST-{u64(current, 12):016x}"
    info = manifest_info(data[manifest_name])
    wals = sorted(f for f in files if f.startswith("wal-"))
    base.newest_wal = wals[-1] if wals else None
    out = []

    def add(f, kind, what, ops, boundary_cut=False, rollback=False):
        if boundary_cut is None:
            boundary_cut = cuts_newest_wal(base, data, ops)
        out.append({"base": base.name, "file": f, "file_kind": kind_of(f), "kind": kind, "what": what, "ops": ops, "boundary_cut": boundary_cut, "rollback": rollback})

    for f in files:
        b = data[f]
        points, bounds = structure(f, b, info)
        seen = set()
        for i, (off, what) in enumerate(points):
            if off in seen:
                continue
            seen.add(off)
            m = bytearray(b)
            m[off] ^= 1 << (off * 7 + i) % 8
            add(f, "flip", f"bit flip in {what} (offset {off})", [("write", f, bytes(m))])
        for _ in range(min(6, len(b))):
            off = rng.randrange(len(b))
            m = bytearray(b)
            m[off] = (m[off] + 1 + rng.randrange(255)) % 256
            add(f, "byte", f"byte changed at offset {off}", [("write", f, bytes(m))])
        for cut in sorted(set(bounds) | {0, len(b) - 1}):
            if 0 <= cut < len(b):
                add(f, "truncate", f"truncated to {cut} bytes", [("write", f, b[:cut])], boundary_cut=None)
        for z in [1, 8, 64, 4096]:
            if z <= len(b):
                add(f, "zeros", f"last {z} bytes zeroed", [("write", f, b[: len(b) - z] + bytes(z))], boundary_cut=None)
        add(f, "zeros", "4096 zeros appended", [("write", f, b + bytes(4096))], boundary_cut=None)
        add(f, "delete", "removed", [("delete", f)], boundary_cut=None)
        if f.startswith("wal-") and wal_header_len(b) in (24, 52):
            # Damage that keeps every checksum right, so that only the WAL's numbering and
            # seals can tell: a record removed whole, the header's first_seq moved, a seal's
            # batch count changed.
            records = wal_records(b)
            for i, (start, end, kind) in enumerate(records):
                what = "the seal" if kind == 2 else f"record {i}"
                add(f, "splice", f"{what} removed whole (bytes {start}..{end})", [("write", f, b[:start] + b[end:])], boundary_cut=None)
            for delta in (-1, 1):
                m = bytearray(b)
                at = wal_first_seq_at(b)
                struct.pack_into("<Q", m, at, (u64(b, at) + delta) % 2**64)
                struct.pack_into("<I", m, at + 8, zlib.crc32(bytes(m[: at + 8])))
                add(f, "splice", f"first_seq {delta:+d} with its header CRC recomputed", [("write", f, bytes(m))])
            for what, m in tag3_breaches(b, records, info):
                add(f, "splice", f"{what}, the record's CRC recomputed", [("write", f, m)])
            for start, end, kind in records:
                if kind == 2:
                    m = bytearray(b)
                    struct.pack_into("<Q", m, start + 17, u64(b, start + 17) + 1)
                    struct.pack_into("<I", m, start, wal_record_crc(m, m[start + 4 : end]))
                    add(f, "splice", "seal's batch count +1 with its CRC recomputed", [("write", f, bytes(m))])
        if f.endswith(".seg"):
            for what, m in shingles_breaches(b):
                add(f, "reseal", f"SHINGLES {what}, every checksum recomputed", [("write", f, m)])
    # Stale copies: the file of the same name from an earlier snapshot, and CURRENT with its
    # manifest rolled back together.
    for snap in base.snapshots:
        for f in files:
            p = os.path.join(snap, f)
            if os.path.exists(p):
                old = open(p, "rb").read()
                if old != data[f]:
                    add(f, "stale", f"replaced by its copy in {os.path.basename(snap)}", [("write", f, old)], boundary_cut=None)
        for f in sorted(os.listdir(snap)):
            # A file of the snapshot that is gone now (a WAL file or segment a flush or a
            # compaction replaced) comes back.
            if f not in data and f != "LOCK":
                add(f, "stale", f"reappears from {os.path.basename(snap)}", [("write", f, open(os.path.join(snap, f), "rb").read())])
        old_current = open(os.path.join(snap, "CURRENT"), "rb").read()
        old_manifest = f"MANIFEST-{u64(old_current, 12):016x}"
        if old_current != current:
            ops = [("write", "CURRENT", old_current), ("write", old_manifest, open(os.path.join(snap, old_manifest), "rb").read())]
            add("CURRENT", "stale", f"CURRENT and {old_manifest} rolled back to {os.path.basename(snap)}", ops, rollback=True)
    # Swaps within a kind.
    for kind in ("seg-", "wal-"):
        same = [f for f in files if f.startswith(kind)]
        for a, b2 in zip(same, same[1:]):
            add(a, "swap", f"contents swapped with {b2}", [("write", a, data[b2]), ("write", b2, data[a])])
    return out


def tag3_breaches(data, records, info):
    """(what, bytes) of a WAL file whose first insert with its set (op tag 3, format/wal.md)
    is made a tag-1 insert, or has its coded set's count raised by one, with the record's CRC
    recomputed: what only the operation decoding can tell."""
    if not info.get("store_sets") or wal_header_len(data) != 24:
        return []  # (version 3 has one insert tag, 4: no tag 3 to break)
    rb = (info["num_perm"] * info["bits"] + 7) // 8
    for start, end, kind in records:
        p = start + 17
        if kind != 1 or u32(data, p) == 0 or data[p + 4] != 3:
            continue
        key_len = u32(data, p + 13)
        set_at = p + 17 + key_len + 8 * info["bands"] + rb + 4
        out = []
        for what, at, value in [("first insert's tag 3 made 1", p + 4, 1), ("first insert's set count + 1", set_at, data[set_at] + 1)]:
            if value & 0x7F == 0:
                continue  # (the count's low 7 bits were all set: +1 would carry)
            m = bytearray(data)
            m[at] = value
            struct.pack_into("<I", m, start, zlib.crc32(bytes(m[start + 4 : end])))
            out.append((what, bytes(m)))
        return out
    return []


def reseal_segment(m):
    """Recomputes a version-2 or version-3 segment's block CRCs, section CRCs and meta_crc in
    place (format/segment.md), so that only the content rules can tell a change (and, in
    version 3, the manifest's meta_crc)."""
    n = len(m)
    hdr = segment_header_len(m)
    sections = segment_sections(m)
    _, _, _, table_off, table_len, _ = sections[-1]  # CHECKSUMS
    for j in range(table_len // 4):
        lo, hi = max(hdr, BLOCK * j), min(BLOCK * (j + 1), table_off)
        struct.pack_into("<I", m, table_off + 4 * j, zlib.crc32(bytes(m[lo:hi])))
    for e, _, _, off, length, _ in sections:
        struct.pack_into("<I", m, e + 32, zlib.crc32(bytes(m[off : off + length])))
    tab = u64(m, n - 32)
    struct.pack_into("<I", m, n - 8, zlib.crc32(bytes(m[:hdr]) + bytes(m[tab : n - 32]) + bytes(m[n - 32 : n - 8])))
    return bytes(m)


def shingles_breaches(data):
    """(what, bytes) of SHINGLES sections that break a rule of format/segment.md while every
    checksum matches (a writer never produces them; each must read as corruption wherever it
    is used, never as a different set): the offset table not starting at 0, decreasing, or not
    ending at the section's end; a set's count one more or one less than its values; a varint
    of 6 bytes; a value past 32 bits."""
    sec = next(((off, length, count) for _, kind, _, off, length, count in segment_sections(data) if kind == 7), None)
    if sec is None or u32(data, 8) not in (2, 3):
        return []
    off, length, count = sec
    table = off + 8 * (count + 1)
    offsets = [u64(data, off + 8 * i) for i in range(count + 1)]
    out = []

    def variant(what, edit):
        m = bytearray(data)
        edit(m)
        out.append((what, reseal_segment(m)))

    variant("offsets[0] = 1", lambda m: struct.pack_into("<Q", m, off, 1))
    if count >= 2:
        mid = count // 2
        variant(f"offsets[{mid}] above offsets[{mid + 1}]", lambda m: struct.pack_into("<Q", m, off + 8 * mid, offsets[mid + 1] + 1))
    variant(f"offsets[{count}] one short of the end", lambda m: struct.pack_into("<Q", m, off + 8 * count, offsets[count] - 1))
    for row in sorted({0, count - 1}):
        start = table + offsets[row]
        size = offsets[row + 1] - offsets[row]
        if not 0 <= row < count or size < 2:
            continue
        # The count's low 7 bits are in its first byte: +1 or -1 there keeps its length.
        low = data[start] & 0x7F
        if low < 0x7F:
            variant(f"set of ordinal {row}: count + 1", lambda m, s=start: m.__setitem__(s, m[s] + 1))
        if low > 0:
            variant(f"set of ordinal {row}: count - 1", lambda m, s=start: m.__setitem__(s, m[s] - 1))
        first = start + next(i for i in range(size) if data[start + i] < 0x80) + 1  # the first value
        if first + 6 <= start + size:
            # The first value as a varint of 6 bytes (5 continuation bytes over its own bytes
            # and what follows), or as 5 bytes holding 2^33 - 1.
            variant(f"set of ordinal {row}: a 6-byte varint", lambda m, s=first: m.__setitem__(slice(s, s + 5), b"\xff" * 5))
            variant(f"set of ordinal {row}: first value past 32 bits",
                    lambda m, s=first: m.__setitem__(slice(s, s + 5), b"\xff\xff\xff\xff\x1f"))
    return out


def apply(db, ops):
    for op in ops:
        path = os.path.join(db, op[1])
        if op[0] == "delete":
            os.remove(path)
        else:
            with open(path, "wb") as f:
                f.write(op[2])


# ---------------------------------------------------------------------------------------------
# Files from elsewhere (--siblings): databases built by one pipeline, and an older state of one


def pick(docs, k, salt):
    """The ids of `k` of `docs` ((id, text) pairs), chosen by their texts: what a pipeline's
    data-dependent step (a dedup feeding `mhdb delete`, an upsert of changed rows) chooses,
    so that databases built by the same commands from other texts differ in which documents
    it touches, not in how many."""
    pool = [(zlib.crc32((salt + text).encode()), key) for key, text in docs]
    return [key for _, key in sorted(pool)[:k]]


def pipeline_base(runner, work, name, docs, spare, kind_flags=()):
    """One database created with `kind_flags` (default: a MinHash index of 64 slots of 8 bits)
    and built by the fixed pipeline below from `docs` (at least 171 (id, text) pairs, added
    in order) and `spare` (at least 11 texts for upserts). Every step's file names and counts
    depend on the commands only, so two databases built from other texts with ids of equal
    lengths have files of the same names and mostly the same lengths (what lets a copied
    file pass the manifest's length checks). A snapshot after each step keeps
    the older files of every kind for the rollbacks:
      add 80, add 70 + 5 upserts (a deletion list of 5), delete 4 (a WAL file), compact,
      add 20 + 5 upserts (a new segment, a new deletion list of 5), delete 3, delete 2 (two
      WAL files, the newest last);
    and, as if a crash had cut it off before its manifest, that add made first from other
    texts and upserts on a copy (its segment and deletion list have the names the real add's
    get: the older copies of the same names)."""
    path = os.path.join(work, name)
    flags = list(kind_flags) or ["--perms", "64", "--bits", "8", "--threshold", "0.6"]
    must(runner, ["create", path] + flags)
    snaps = []
    live = {}

    def step(i, args, rows=None):
        if rows is not None:
            f = os.path.join(work, f"{name}-step{i}.jsonl")
            write_jsonl(f, [{"id": k, "text": t} for k, t in rows])
            args = args + [f]
            live.update(rows)
        must(runner, args)
        snap = os.path.join(work, f"{name}-snap{len(snaps)}")
        shutil.copytree(path, snap)
        snaps.append(snap)

    def delete(i, k):
        gone = pick(sorted(live.items()), k, f"delete-{i}")
        for key in gone:
            del live[key]
        step(i, ["delete", path] + gone)
        return gone

    step(0, ["add", path], docs[:80])
    upserts = pick(docs[:80], 5, "upsert-1")
    step(1, ["add", path], docs[80:150] + [(k, spare[i]) for i, k in enumerate(upserts)])
    deleted = delete(2, 4)
    step(3, ["compact", path])
    # A write cut off by a crash before its manifest: it left a segment and a deletion list
    # that no manifest names, whose ids the next write takes again (format/README.md). Its
    # copy keeps them: an older file of the same name, range and length as the next write's.
    cut = os.path.join(work, f"{name}-cut-write")
    shutil.copytree(path, cut)
    f = os.path.join(work, f"{name}-cut-write.jsonl")
    others = pick(sorted(live.items()), 5, "upsert-2-cut")
    write_jsonl(f, [{"id": k, "text": t[::-1]} for k, t in docs[150:170]] + [{"id": k, "text": spare[i]} for i, k in enumerate(others)])
    must(runner, ["add", cut, f])
    snaps.append(cut)
    upserts = pick(sorted(live.items()), 5, "upsert-2")
    step(4, ["add", path], docs[150:170] + [(k, spare[5 + i]) for i, k in enumerate(upserts)])
    deleted += delete(5, 3)
    deleted += delete(6, 2)
    snaps.pop()  # (the state after the last step is the base itself)
    corpus_queries = read_jsonl(os.path.join(ROOT, "samples", "queries.jsonl"))[:6]
    queries = os.path.join(work, f"{name}-queries.jsonl")
    texts = [q["text"] for q in corpus_queries] + [t for _, t in docs[:170:17]] + list(spare[:10:3])
    write_jsonl(queries, [{"id": f"q{i}", "text": t} for i, t in enumerate(texts)])
    keys = [k for k, _ in docs[:170:9]] + deleted + ["absent-key"]
    add_input = os.path.join(work, f"{name}-add.jsonl")
    write_jsonl(add_input, [{"id": docs[170][0], "text": docs[170][1]}, {"id": docs[3][0], "text": spare[10]}])
    base = Base(name, path, queries, keys, add_input)
    base.snapshots = snaps
    return base


def v3_base(runner, work):
    """tests/golden/db-v3 as committed (format version 3, nothing upgraded): two segments with
    stored sets, a deletion list, a sealed WAL file and the newest left as a crash leaves it."""
    name = "v3"
    path = os.path.join(work, name)
    shutil.copytree(os.path.join(ROOT, "tests", "golden", "db-v3"), path)
    expected = json.load(open(os.path.join(ROOT, "tests", "golden", "db-v3.expected.json")))
    return fixture_base(work, name, path, expected, 9, 5)


# The identity every database of the `template` family shares, as `cp -r` of one template
# directory gives it (here through the CLI's test hook, MHDB_TEST_IDENTITY).
TEMPLATE_IDENTITY = "5445535454454d504c41544549440001"


def sibling_bases(runner, work):
    """The bases of --siblings, each with the databases its files come from (`donors`:
    (family, path)): `sib`, `sib-sets` (made with --store-sets) and `sib-simhash` (a SimHash
    index), each with a twin built by the same commands with the same ids and other texts
    (family `sibling`); `shard`, with two other shards of the same pipeline (other ids of
    the same lengths, other texts: family `shard`). Each base's own snapshots give the
    rollbacks (family `rollback`)."""
    corpus = read_jsonl(os.path.join(ROOT, "samples", "corpus.jsonl"))
    texts = [d["text"] for d in corpus]
    n = len(texts)

    def docs(ids, offset):
        return [(k, texts[(offset + i) % n]) for i, k in enumerate(ids)]

    ids = [d["id"] for d in corpus[:171]]
    spare_a = [texts[(200 + i) % n] for i in range(11)]
    spare_b = [texts[(20 + i) % n] for i in range(11)]
    bases = []
    variants = [("sib", []), ("sib-sets", ["--perms", "64", "--bits", "8", "--threshold", "0.6", "--store-sets"]),
                ("sib-simhash", ["--kind", "simhash", "--max-hamming", "6"])]
    for name, flags in variants:
        a = pipeline_base(runner, work, name, docs(ids, 0), spare_a, flags)
        twin = pipeline_base(runner, work, name + "-twin", docs(ids, n // 2), spare_b, flags)
        a.donors = [("sibling", twin.path)]
        bases.append(a)
    shards = [pipeline_base(runner, work, f"shard-{s}", docs([f"shard{s}-doc-{i:04d}" for i in range(171)], s * n // 3),
                            [spare_a, spare_b, spare_a[::-1]][s]) for s in range(3)]
    shards[0].name = "shard"
    shards[0].donors = [("shard", s.path) for s in shards[1:]]
    bases.append(shards[0])
    # Twins that share one identity: the fault model's undetectable class for a WAL file
    # whose numbering fits (outcome shared-identity); segments and deletion lists are still
    # pinned by the manifest's checksums.
    template = Runner(runner.mhdb, runner.timeout, dict(os.environ, MHDB_TEST_IDENTITY=TEMPLATE_IDENTITY))
    a = pipeline_base(template, work, "tpl", docs(ids, 0), spare_a)
    twin = pipeline_base(template, work, "tpl-twin", docs(ids, n // 2), spare_b)
    a.donors = [("template", twin.path)]
    bases.append(a)
    return bases


def db_files(path):
    """{name: bytes} of a database directory's files (LOCK aside)."""
    return {f: open(os.path.join(path, f), "rb").read() for f in sorted(os.listdir(path)) if f != "LOCK"}


def sibling_mutations(base):
    """The files-from-elsewhere mutations of `base`, each a whole file written over one of
    its own:
      sibling / shard  a donor's file of the same kind over each of the base's files (the
                     file of the same name, and those of other names), the donor's manifest
                     alone and with its CURRENT, and every segment and deletion list, then
                     every data file, of the donor copied over (`cp B/seg-* B/del-* A/`);
      rollback       each older file of the same kind kept in the base's snapshots (another
                     name's or an older copy of the same name's) over each segment, the
                     deletion list and each WAL file (the newest WAL too, but never with an
                     older copy of itself: the fault model's undetectable case)."""
    data = db_files(base.path)
    wals = sorted(f for f in data if f.startswith("wal-"))
    base.newest_wal = wals[-1] if wals else None
    out = []

    def add(f, kind, what, ops):
        out.append({"base": base.name, "file": f, "file_kind": kind_of(f), "kind": kind, "what": what, "ops": ops,
                    "boundary_cut": cuts_newest_wal(base, data, ops), "rollback": False})

    def same_kind(a, b):
        return kind_of(a) == kind_of(b)

    data_kinds = ("segment", "deletion list", "WAL")
    for family, donor in base.donors:
        theirs = db_files(donor)
        for f in data:
            for g in theirs:
                if same_kind(f, g) and kind_of(f) in data_kinds:
                    where = "its copy" if f == g else f"its {g}"
                    same = " (the same bytes)" if theirs[g] == data[f] else ""
                    add(f, family, f"replaced by {where} from the {family} database{same}", [("write", f, theirs[g])])
        manifest = next(f for f in theirs if f.startswith("MANIFEST-"))
        if manifest in data:
            add(manifest, family, f"replaced by its copy from the {family} database", [("write", manifest, theirs[manifest])])
        add("CURRENT", family, f"CURRENT and {manifest} from the {family} database",
            [("write", "CURRENT", theirs["CURRENT"]), ("write", manifest, theirs[manifest])])
        for kinds, what in [(("segment", "deletion list"), "every segment and deletion list"), (data_kinds, "every data file")]:
            ops = [("write", g, theirs[g]) for g in theirs if kind_of(g) in kinds]
            if ops:
                add(ops[0][1], family, f"{what} of the {family} database copied in", ops)
    older = {}
    for snap in base.snapshots:
        for g, b in db_files(snap).items():
            if kind_of(g) in data_kinds:
                older.setdefault((g, b), os.path.basename(snap))
    for f in data:
        for (g, b), snap in sorted(older.items()):
            if not same_kind(f, g) or b == data[f] or (f == base.newest_wal and g == f):
                continue
            where = "its older copy" if f == g else f"the older {g}"
            add(f, "rollback", f"replaced by {where} from {snap}", [("write", f, b)])
    return out


# ---------------------------------------------------------------------------------------------
# Classification


def classify(base, mutation, results):
    """{cmd: outcome} for one mutation's results."""
    outcome = {}
    prefix_states = [p for _, p in base.prefix_baselines]
    wal = mutation["file"].startswith("wal-") or any(op[1].startswith("wal-") for op in mutation["ops"])
    touched = {op[1] for op in mutation["ops"]}
    # WAL files moved between databases of one identity: whatever they answer (a twin's
    # records may even look like a cut of this WAL) is the fault model's undetectable class.
    shared = mutation["kind"] == "template" and all(kind_of(op[1]) == "WAL" for op in mutation["ops"])
    for cmd in COMMANDS:
        rc, err, answer, _ = results[cmd]
        want_rc, _, want, _ = base.baseline[cmd]
        if rc is None:
            outcome[cmd] = "hang"
        elif rc < 0 or rc == 101 or "panicked at" in err:
            outcome[cmd] = "crash"
        elif rc == want_rc and answer == want:
            outcome[cmd] = "correct"
        elif rc == 3 and CORRUPTION.search(err):
            named = os.path.basename(CORRUPTION.search(err).group(1))
            outcome[cmd] = "detected" if named in touched else "detected-elsewhere"
        elif wal and any(rc == p[cmd][0] and answer == p[cmd][2] for p in prefix_states):
            if shared:
                outcome[cmd] = "shared-identity"
            elif mutation["boundary_cut"]:
                outcome[cmd] = "torn-tail-boundary"
            elif TORN_REPORTED.search(err):
                outcome[cmd] = "torn-tail-reported"
            else:
                outcome[cmd] = "torn-tail-damage"
        elif cmd in WRITES and rc == 0 and results[cmd][3] and not results[cmd][3][0] and results[cmd][3][1] & touched:
            # The writer did not read the damaged bytes (an add writes a new segment beside
            # them), and the reads of its result still report them: not laundered.
            outcome[cmd] = "detected-after-write"
        elif rc == 0 or (cmd == "get" and rc == 1 and GET_ABSENT.fullmatch(err.strip())):
            # (get's exit 1 with only "N of M keys absent" on stderr is its answer.)
            if mutation["rollback"]:
                outcome[cmd] = "rolled-back"
            elif shared:
                outcome[cmd] = "shared-identity"
            else:
                outcome[cmd] = "silent-wrong"
        else:
            outcome[cmd] = "other-exit"
    # verify answering "ok" is only right when every other command answered right.
    if outcome["verify"] == "correct":
        others = [outcome[c] for c in COMMANDS if c != "verify"]
        if any(o in ("silent-wrong", "torn-tail-damage", "torn-tail-reported") for o in others):
            outcome["verify"] = "silent-wrong"
        elif any(o in ("torn-tail-boundary", "rolled-back", "shared-identity") for o in others):
            outcome["verify"] = next(o for o in others if o in ("torn-tail-boundary", "rolled-back", "shared-identity"))
    return outcome


# ---------------------------------------------------------------------------------------------


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mhdb", default=os.path.join(ROOT, "target", "release", "mhdb"))
    ap.add_argument("--limit", type=int, default=0, help="run this many mutations (seeded sample; 0 = all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--allow-silent", action="store_true", help="silent wrong answers do not fail the run")
    ap.add_argument("--bases", default="v3,golden,built,sets,sets-built,simhash-built")
    ap.add_argument("--siblings", action="store_true",
                    help="instead of the bases' damage: files from elsewhere (a sibling database's, another shard's, an older state's)")
    ap.add_argument("--details", help="write every (mutation, command, outcome) as JSON lines here")
    ap.add_argument("--work", help="scratch directory (default: under /dev/shm when present)")
    args = ap.parse_args(argv)
    if not os.access(args.mhdb, os.X_OK):
        sys.exit(f"corruption_sweep: no mhdb binary at {args.mhdb} (cargo build --release)")
    runner = Runner(args.mhdb, args.timeout)
    scratch_root = args.work or ("/dev/shm" if os.path.isdir("/dev/shm") else None)
    work = tempfile.mkdtemp(prefix="mhdb-sweep-", dir=scratch_root)
    started = time.time()
    try:
        bases = sibling_bases(runner, work) if args.siblings else []
        for name in [] if args.siblings else args.bases.split(","):
            if name == "v3":
                base = v3_base(runner, work)
            elif name in ("golden", "golden-v1"):
                base = golden_base(runner, work, upgrade=(name == "golden"))
            elif name == "built":
                base = built_base(runner, work)
            elif name == "sets":
                base = sets_base(runner, work)
            elif name == "sets-built":
                base = built_base(runner, work, name, store_sets=True)
            elif name == "simhash-built":
                base = built_base(runner, work, name, simhash=True)
            else:
                sys.exit(f"corruption_sweep: unknown base {name} (v3, golden, golden-v1, built, sets, sets-built, simhash-built)")
            bases.append(base)
        rng = random.Random(args.seed)
        todo = []
        for base in bases:
            todo += [(base, m) for m in (sibling_mutations(base) if args.siblings else mutations(base, rng))]
        total = len(todo)
        if args.limit and args.limit < total:
            todo = random.Random(args.seed).sample(todo, args.limit)
        # Baselines: the undamaged answers, and those of every cut of the newest WAL at a
        # record boundary (what a torn tail gives).
        for base in bases:
            s = tempfile.mkdtemp(dir=work)
            base.baseline = answers(runner, base, base.path, s)
            for cmd, (rc, err, _, _) in base.baseline.items():
                if rc not in (0, 1):
                    sys.exit(f"corruption_sweep: {base.name}: {cmd} fails on the undamaged database: {err}")
            if base.newest_wal:
                wal = open(os.path.join(base.path, base.newest_wal), "rb").read()
                ends = [wal_header_len(wal)] + [e for _, e, k in wal_records(wal) if k == 1]
                for keep, end in enumerate(ends[:-1]):
                    cut = os.path.join(s, "cut")
                    shutil.copytree(base.path, cut)
                    apply(cut, [("write", base.newest_wal, wal[:end])])
                    base.prefix_baselines.append((keep, answers(runner, base, cut, s)))
                    shutil.rmtree(cut)
            shutil.rmtree(s)

        counts = {cmd: {o: 0 for o in OUTCOMES} for cmd in COMMANDS}
        # Writers that answered wrongly and left a result that verify passes: damage made
        # permanent under fresh checksums.
        laundered = {cmd: 0 for cmd in WRITES}
        by_kind = {}
        by_mutation = {}
        examples = {}
        lock = threading.Lock()
        details = open(args.details, "w") if args.details else None
        done = [0]

        def one(item):
            base, m = item
            s = tempfile.mkdtemp(dir=work)
            try:
                db = os.path.join(s, "db")
                shutil.copytree(base.path, db)
                apply(db, m["ops"])
                results = answers(runner, base, db, s)
            finally:
                shutil.rmtree(s, ignore_errors=True)
            outcome = classify(base, m, results)
            with lock:
                done[0] += 1
                for cmd, o in outcome.items():
                    counts[cmd][o] += 1
                    if cmd in WRITES and o == "silent-wrong" and results[cmd][3] and results[cmd][3][0]:
                        laundered[cmd] += 1
                    k = by_kind.setdefault(m["file_kind"], {x: 0 for x in OUTCOMES})
                    k[o] += 1
                    k = by_mutation.setdefault(m["kind"], {x: 0 for x in OUTCOMES})
                    k[o] += 1
                    if o not in ("correct", "detected") and (o, m["file_kind"]) not in examples:
                        examples[(o, m["file_kind"])] = f"{base.name} {m['file']}: {m['what']}: {cmd}: {results[cmd][1].strip()[:160]}"
                if details:
                    details.write(json.dumps({"base": base.name, "file": m["file"], "mutation": m["what"], "outcome": outcome, "stderr": {c: results[c][1][:300] for c in COMMANDS if outcome[c] != "correct"},
                                              # Each writer's result: whether verify passed, and the files its reads named.
                                              "result_verify": {c: [results[c][3][0], sorted(results[c][3][1])] for c in WRITES if results[c][3]}}) + "\n")
                if done[0] % 100 == 0:
                    print(f"  {done[0]}/{len(todo)} mutations, {time.time() - started:.0f} s", file=sys.stderr)

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            list(pool.map(one, todo))
        if details:
            details.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    n = len(todo)
    print(f"corruption sweep: {n} mutations (of {total}) x {len(COMMANDS)} commands = {n * len(COMMANDS)} runs, "
          f"bases {','.join(b.name for b in bases)}, seed {args.seed}, {time.time() - started:.0f} s")
    print()
    print("| outcome | " + " | ".join(COMMANDS) + " | all |")
    print("| --- |" + " ---: |" * (len(COMMANDS) + 1))
    for o in OUTCOMES:
        row = [counts[c][o] for c in COMMANDS]
        print(f"| {o} | " + " | ".join(str(x) for x in row) + f" | {sum(row)} |")
    print()
    print("silent wrong answers of writers whose result passes verify (damage laundered): "
          + ", ".join(f"{c} {laundered[c]}" for c in WRITES))
    print()
    print("| file kind | " + " | ".join(OUTCOMES) + " |")
    print("| --- |" + " ---: |" * len(OUTCOMES))
    for kind in sorted(by_kind):
        print(f"| {kind} | " + " | ".join(str(by_kind[kind][o]) for o in OUTCOMES) + " |")
    print()
    print("| mutation | " + " | ".join(OUTCOMES) + " |")
    print("| --- |" + " ---: |" * len(OUTCOMES))
    for kind in ["flip", "byte", "truncate", "zeros", "delete", "splice", "reseal", "stale", "swap", "sibling", "shard", "template", "rollback"]:
        if kind in by_mutation:
            print(f"| {kind} | " + " | ".join(str(by_mutation[kind][o]) for o in OUTCOMES) + " |")
    print()
    print("undetectable without an outside witness (the fault model's classes):")
    print("  torn-tail-boundary: WAL records removed whole from the end of the newest WAL file (or")
    print("    the file removed, cut inside its header, or replaced by an older copy of itself)")
    print("    look exactly like writes that were never made")
    print("  rolled-back: CURRENT and its manifest replaced together by an older consistent pair")
    print("    (like the whole directory replaced by an older copy) is a state the database was in")
    print("  torn-tail-reported: a record torn by a crash (never acknowledged) and damage to the")
    print("    last record (acknowledged) leave the same bytes; reported, never silent")
    print("  shared-identity: a WAL file moved between databases copied from one template")
    print("    directory (one identity) whose numbering fits reads as that database's own writes")
    if examples:
        print()
        print("examples (first of each outcome and file kind):")
        for (o, kind), text in sorted(examples.items()):
            print(f"  {o}, {kind}: {text}")
    failing = {o: sum(counts[c][o] for c in COMMANDS) for o in FAILING}
    if failing["crash"] or failing["hang"]:
        print(f"FAILED: {failing['crash']} crashes, {failing['hang']} hangs")
        return 1
    silent = failing["silent-wrong"] + failing["torn-tail-damage"]
    if silent and not args.allow_silent:
        print(f"FAILED: {silent} silent wrong answers (--allow-silent to report only)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
