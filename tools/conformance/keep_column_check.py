#!/usr/bin/env python3
"""The KEEP column (format/segment.md "KEEP", manifest.md feature bit 3, wal.md field bit 2)
through an mhdb binary and the reference reader.

Builds small indexes with `mhdb add --keep-field score` (i64, f64 and string values, nulls and
missing fields; left in the WAL with `--novel-only`, compacted into a segment, bulk-added into
a segment, and a mix with upserts, deletes and an export), and checks that the reference
reader's `keep` value of every live key is the input's and that its counts are `stats --json`'s.
Then damages the KEEP section of a segment, a WAL insert's KEEP field and the manifest's keep
type and field, each with every checksum recomputed (so that only the format's rules can tell),
and raw: `mhdb verify` and the reference reader must both refuse each damaged copy (exit 3 or,
for a field bit a newer build may set, 1; the reader exit 1), and both accept each valid edit.

    python3 tools/conformance/keep_column_check.py target/release/mhdb [WORK_DIR]

Prints one line per check and exits 1 if any failed. Python 3 standard library only.
"""

import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

READER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference_reader.py")
KEEP = 10
HEADER = 96  # a version-3 segment's header
BLOCK = 4096


class Check:
    def __init__(self, mhdb, work):
        self.mhdb = mhdb
        self.work = work
        self.failures = []
        self.count = 0

    def run(self, args):
        return subprocess.run(args, capture_output=True, text=True)

    def must(self, args):
        r = self.run(args)
        if r.returncode:
            raise SystemExit(f"{' '.join(args)}: exit {r.returncode}\n{r.stderr}")
        return r

    def note(self, ok, what):
        self.count += 1
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures.append(what)

    def reader(self, db):
        r = self.run([sys.executable, READER, db])
        return r.returncode, (json.loads(r.stdout) if r.returncode == 0 else None), r.stderr.strip()

    # -- building -------------------------------------------------------------------------

    def build(self, name, batches, field="score", keep_type=None, novel=True, compact=False):
        """A new index `name`: each batch added with --keep-field (--novel-only: through the
        WAL; else a bulk insert: a segment), then compacted if asked."""
        db = os.path.join(self.work, name)
        shutil.rmtree(db, ignore_errors=True)
        self.must([self.mhdb, "create", db])
        for i, rows in enumerate(batches):
            path = os.path.join(self.work, f"{name}-{i}.jsonl")
            write_jsonl(path, rows)
            args = [self.mhdb, "add", db, path, "--keep-field", field]
            if keep_type and i == 0:
                args += ["--keep-type", keep_type]
            if novel:
                args += ["--novel-only", "--threshold", "1.0"]
            self.must(args)
        if compact:
            self.must([self.mhdb, "compact", db])
        return db

    def check_values(self, db, expect, ty, field, what):
        """The reader's keep type, field and value per live key against the inputs, and its
        counts against `stats --json`."""
        rc, out, err = self.reader(db)
        if rc:
            self.note(False, f"{what}: the reader fails: {err}")
            return
        p = out["params"]
        self.note((p.get("keep_type"), p.get("keep_field")) == (ty, field),
                  f"{what}: manifest keep type {p.get('keep_type')!r}, field {p.get('keep_field')!r}")
        got = {e["key"]: e.get("keep", "(no keep key)") for e in out["live"]}
        wrong = [(k, got.get(k, "(not live)"), v) for k, v in expect.items() if not same(got.get(k, "(not live)"), v)]
        extra = sorted(set(got) - set(expect))
        self.note(not wrong and not extra, f"{what}: {len(expect)} keep values as the input gave them"
                  + (f" (got, expected: {wrong[:3]}; keys not expected: {extra[:3]})" if wrong or extra else ""))
        stats = json.loads(self.must([self.mhdb, "stats", db, "--json"]).stdout).get("keep")
        with_ = sum(v is not None for v in expect.values())
        want = {"field": field, "type": ty, "with": with_, "without": len(expect) - with_}
        self.note(stats == want, f"{what}: stats --json keep {stats}, the reader's {want}")

    # -- damage ---------------------------------------------------------------------------

    def verdicts(self, db, what, bad):
        """`mhdb verify` and the reader on a damaged (bad) or validly edited copy."""
        v = self.run([self.mhdb, "verify", db])
        rc, _, err = self.reader(db)
        said = (v.stderr or v.stdout).strip().splitlines()
        detail = f"verify exit {v.returncode} [{said[-1] if said else ''}]; reader exit {rc} [{err.splitlines()[-1] if err else ''}]"
        if bad:
            ok = v.returncode in (1, 3) and rc == 1
        else:
            ok = v.returncode == 0 and rc == 0
        self.note(ok, f"{what}: {'refused' if bad else 'accepted'} by both? {detail}")

    def segment_edit(self, src, what, bad, edit):
        """A copy of `src` whose first segment has `edit(header, sections)` applied, every
        checksum recomputed and the manifest's pin of it updated."""
        dst = os.path.join(self.work, "damaged")
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
        name = sorted(f for f in os.listdir(dst) if f.startswith("seg-"))[0]
        path = os.path.join(dst, name)
        with open(path, "rb") as f:
            buf = f.read()
        header, secs = segment_parts(buf)
        if edit(header, secs) is False:
            return
        new, meta = segment_build(header, secs)
        with open(path, "wb") as f:
            f.write(new)
        old_meta = struct.unpack_from("<I", buf, len(buf) - 8)[0]
        repin_segment(dst, int(name[4:20], 16), len(buf), len(new), old_meta, meta)
        self.verdicts(dst, what, bad)

    def segment_flips(self, src, tag):
        """One raw bit flipped at the first and the last byte of the KEEP section."""
        dst = os.path.join(self.work, "damaged")
        name = sorted(f for f in os.listdir(src) if f.startswith("seg-"))[0]
        with open(os.path.join(src, name), "rb") as f:
            buf = f.read()
        sec = keep_section(segment_parts(buf)[1])
        for at in (sec["off"], sec["off"] + len(sec["data"]) - 1):
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst)
            flipped = bytearray(buf)
            flipped[at] ^= 1
            with open(os.path.join(dst, name), "wb") as f:
                f.write(flipped)
            self.verdicts(dst, f"{tag}: a raw bit flip at byte {at} (KEEP section)", True)

    def segment_damage(self, seg, tag, ty, rows):
        n = len(rows)
        words = (n + 63) // 64
        present = [r.get("score") is not None for r in rows]
        absent, first = present.index(False), present.index(True)

        def presence(row, on):
            def edit(h, secs):
                d = keep_section(secs)["data"]
                w = struct.unpack_from("<Q", d, 8 * (row // 64))[0]
                struct.pack_into("<Q", d, 8 * (row // 64), w | 1 << row % 64 if on else w & ~(1 << row % 64))
            return edit

        def entry(field, value):
            def edit(h, secs):
                keep_section(secs)[field] = value
            return edit

        if n % 64:
            self.segment_edit(seg, f"{tag}: a presence bit past the last row", True, presence(n, True))
        if rows[first]["score"] != "":
            self.segment_edit(seg, f"{tag}: row {first}'s presence bit cleared, its value kept", True, presence(first, False))
        self.segment_edit(seg, f"{tag}: absent row {absent}'s presence bit set (0, 0.0 or the empty string)", False,
                          presence(absent, True))
        if ty != "string":
            def row_bytes(row, value, fmt="<Q"):
                def edit(h, secs):
                    struct.pack_into(fmt, keep_section(secs)["data"], 8 * words + 8 * row, value)
                return edit
            self.segment_edit(seg, f"{tag}: absent row {absent} with a non-zero byte", True, row_bytes(absent, 1))
            self.segment_edit(seg, f"{tag}: the section 8 bytes longer", True,
                              lambda h, secs: keep_section(secs)["data"].extend(bytes(8)))
            if ty == "f64":
                self.segment_edit(seg, f"{tag}: row {first} a NaN", True, row_bytes(first, 0x7FF8000000000001))
                self.segment_edit(seg, f"{tag}: row {first} +inf", False, row_bytes(first, math.inf, "<d"))
        else:
            table = 8 * words

            def offset(i, delta):
                def edit(h, secs):
                    d = keep_section(secs)["data"]
                    v = struct.unpack_from("<Q", d, table + 8 * i)[0]
                    struct.pack_into("<Q", d, table + 8 * i, (v + delta) % (1 << 64))
                return edit
            self.segment_edit(seg, f"{tag}: offsets[0] = 1", True, offset(0, 1))
            self.segment_edit(seg, f"{tag}: the last offset one short of the end", True, offset(n, -1))
            self.segment_edit(seg, f"{tag}: the last offset one past the end", True, offset(n, 1))
            mid = next(i for i in range(1, n) if present[i] and rows[i]["score"])
            self.segment_edit(seg, f"{tag}: offsets[{mid}] far above offsets[{mid + 1}]", True, offset(mid, 10**6))
            gap = next((i for i in range(n - 1) if not present[i] and present[i + 1] and rows[i + 1]["score"]), None)
            if gap is not None:
                self.segment_edit(seg, f"{tag}: absent row {gap} given a byte of the next value", True, offset(gap + 1, 1))
            self.segment_edit(seg, f"{tag}: a byte after the last value (the section one longer)", True,
                              lambda h, secs: keep_section(secs)["data"].append(0x41))

            def change_byte(h, secs):
                d = keep_section(secs)["data"]
                start, end = struct.unpack_from("<QQ", d, table + 8 * first)
                if end == start:
                    return False
                d[table + 8 * (n + 1) + start] ^= 0x20
            self.segment_edit(seg, f"{tag}: a byte of row {first}'s value changed", False, change_byte)
            longest = max(range(n), key=lambda i: len(rows[i].get("score") or ""))
            if len(rows[longest]["score"]) == 65535:
                def longer(h, secs):
                    d = keep_section(secs)["data"]
                    offs = list(struct.unpack_from(f"<{n + 1}Q", d, table))
                    values = bytes(d[table + 8 * (n + 1):])
                    values = values[: offs[longest + 1]] + b"y" + values[offs[longest + 1]:]
                    offs = offs[: longest + 1] + [o + 1 for o in offs[longest + 1:]]
                    d[table:] = struct.pack(f"<{n + 1}Q", *offs) + values
                self.segment_edit(seg, f"{tag}: row {longest}'s value 65,536 bytes long", True, longer)
        other = {"i64": 2, "f64": 1, "string": 1}[ty]
        for wa in (0, 4, 255, other):
            self.segment_edit(seg, f"{tag}: width_a {wa}", True, entry("wa", wa))
        self.segment_edit(seg, f"{tag}: width_b 1", True, entry("wb", 1))
        self.segment_edit(seg, f"{tag}: count + 1", True, entry("count", n + 1))
        self.segment_edit(seg, f"{tag}: index 1", True, entry("index", 1))

        def flag_off(h, secs):
            struct.pack_into("<I", h, 12, struct.unpack_from("<I", h, 12)[0] & ~4)

        def section_off(h, secs):
            flag_off(h, secs)
            secs.remove(keep_section(secs))
        self.segment_edit(seg, f"{tag}: header flag bit 2 cleared, the section kept", True, flag_off)
        self.segment_edit(seg, f"{tag}: the section and its flag removed (the manifest has KEEP)", True, section_off)
        self.segment_flips(seg, tag)

    def wal_damage(self, db, tag, ty):
        """The first WAL insert with a KEEP field, edited with its record's seeded CRC
        recomputed."""
        man = read(os.path.join(db, manifest_name(db)))
        db_id, bits, num_perm = man[20:36], man[51], struct.unpack_from("<I", man, 52)[0]
        rb = (num_perm * bits + 7) // 8
        name = [f for f in sorted(os.listdir(db)) if f.startswith("wal-") and os.path.getsize(os.path.join(db, f)) > 52][-1]
        buf = read(os.path.join(db, name))
        found = first_keep_field(buf, rb)
        if found is None:
            self.note(False, f"{tag}: no WAL insert with a KEEP field in {name}")
            return
        record, length, fields_at, keep_at = found
        seed = db_id + struct.pack("<Q", int(name[4:20], 16))

        def variant(what, bad, edit):
            dst = os.path.join(self.work, "damaged")
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(db, dst)
            b = bytearray(buf)
            edit(b)
            struct.pack_into("<I", b, record, zlib.crc32(seed + bytes(b[record + 4 : record + 17 + length])))
            with open(os.path.join(dst, name), "wb") as f:
                f.write(b)
            self.verdicts(dst, f"{tag}, WAL: {what}", bad)

        if ty == "f64":
            variant("the KEEP value a NaN", True, lambda b: struct.pack_into("<Q", b, keep_at, 0x7FF0000000000001))
            variant("the KEEP value -inf", False, lambda b: struct.pack_into("<d", b, keep_at, -math.inf))
        elif ty == "i64":
            variant("the KEEP value -1", False, lambda b: struct.pack_into("<q", b, keep_at, -1))
        else:
            variant("the KEEP length + 1", True,
                    lambda b: struct.pack_into("<H", b, keep_at, struct.unpack_from("<H", b, keep_at)[0] + 1))
        variant("fields bit 2 cleared, the value kept", True, lambda b: b.__setitem__(fields_at, b[fields_at] & ~4))
        variant("fields bit 4 set (unknown: unsupported)", True, lambda b: b.__setitem__(fields_at, b[fields_at] | 0x10))

    def manifest_damage(self, db):
        """keep_type (offset 90), the feature bit and the field's name (after the one banding)."""
        field_at = 44 + 82 + 24

        def feature_off(m):
            struct.pack_into("<Q", m, 36, struct.unpack_from("<Q", m, 36)[0] & ~8)
        cases = [
            ("keep_type 0 with feature KEEP", True, lambda m: m.__setitem__(90, 0)),
            ("keep_type 4", True, lambda m: m.__setitem__(90, 4)),
            ("keep_type 2 (f64) over segments of type 1", True, lambda m: m.__setitem__(90, 2)),
            ("feature KEEP cleared, type and field kept", True, feature_off),
            ("the field's name not UTF-8", True, lambda m: m.__setitem__(field_at, 0xFF)),
            ("the field's name 'score' made 'scorf'", False, lambda m: m.__setitem__(field_at + 4, ord("f"))),
        ]
        for what, bad, edit in cases:
            dst = os.path.join(self.work, "damaged")
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(db, dst)
            path = os.path.join(dst, manifest_name(dst))
            m = bytearray(read(path))
            edit(m)
            struct.pack_into("<I", m, len(m) - 4, zlib.crc32(bytes(m[:-4])))
            with open(path, "wb") as f:
                f.write(m)
            self.verdicts(dst, f"manifest: {what}", bad)


# -- inputs --------------------------------------------------------------------------------


def texts(n, salt):
    words = ["river", "bridge", "council", "market", "garden", "harbour", "station", "library", "museum", "school",
             "bakery", "tower", "square", "meadow", "forest", "valley", "castle", "chapel", "mill", "quay"]
    return [f"doc {salt} {i}: " + " ".join(words[(i * 7 + j * 3 + salt) % len(words)] for j in range(12))
            + f" number {i * 7919 + salt}" for i in range(n)]


MISSING = object()


def rows_of(prefix, texts_, values):
    rows = []
    for i, v in enumerate(values):
        row = {"id": f"{prefix}{i}", "text": texts_[i]}
        if v is not MISSING:
            row["score"] = v
        rows.append(row)
    return rows


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def expected(rows, ty):
    """What the reader prints: null without a value, integers as f64 in an f64 column."""
    out = {}
    for r in rows:
        v = r.get("score")
        out[r["id"]] = float(v) if ty == "f64" and v is not None else v
    return out


def same(a, b):
    """Equal and of one type; floats bit for bit (-0.0 is not 0.0)."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return type(a) is type(b) and a == b


# -- file surgery ---------------------------------------------------------------------------


def read(path):
    with open(path, "rb") as f:
        return f.read()


def manifest_name(db):
    return f"MANIFEST-{struct.unpack_from('<Q', read(os.path.join(db, 'CURRENT')), 12)[0]:016x}"


def segment_parts(buf):
    """A version-3 segment's header and sections (format/segment.md), editable."""
    n = len(buf)
    table, count = struct.unpack_from("<QI", buf, n - 32)
    secs = []
    for i in range(count):
        kind, wa, wb, index, off, length, cnt, _crc, res = struct.unpack_from("<HBBIQQQII", buf, table + 40 * i)
        secs.append({"kind": kind, "wa": wa, "wb": wb, "index": index, "count": cnt, "res": res, "off": off,
                     "data": bytearray(buf[off : off + length])})
    return bytearray(buf[:HEADER]), secs


def segment_build(header, secs):
    """The segment's bytes with sections laid out back to back, CHECKSUMS, section CRCs and
    meta_crc recomputed; and its meta_crc."""
    data = bytearray(header)
    for s in secs[:-1]:
        s["off"] = len(data)
        data += s["data"]
    end = len(data)
    blocks = (end + BLOCK - 1) // BLOCK
    sums = b"".join(struct.pack("<I", zlib.crc32(bytes(data[max(HEADER, BLOCK * j) : min(BLOCK * (j + 1), end)])))
                    for j in range(blocks))
    secs[-1].update(data=bytearray(sums), count=blocks, off=end)
    data += sums
    table = b"".join(struct.pack("<HBBIQQQII", s["kind"], s["wa"], s["wb"], s["index"], s["off"], len(s["data"]),
                                 s["count"], zlib.crc32(bytes(s["data"])), s["res"]) for s in secs)
    footer = struct.pack("<QIIQ", len(data), len(secs), 0, len(data) + len(table) + 32)
    meta = zlib.crc32(bytes(header) + table + footer)
    return bytes(data) + table + footer + struct.pack("<I", meta) + b"MHSF", meta


def repin_segment(db, seg_id, old_len, new_len, old_meta, new_meta):
    """The manifest entry of segment `seg_id` given its new length and meta_crc, and the
    manifest's CRC recomputed (its length, so CURRENT, unchanged)."""
    path = os.path.join(db, manifest_name(db))
    m = bytearray(read(path))
    want = struct.pack("<Q", seg_id)
    at = next(i for i in range(len(m) - 44) if m[i : i + 8] == want
              and struct.unpack_from("<QI", m, i + 32) == (old_len, old_meta))
    struct.pack_into("<QI", m, at + 32, new_len, new_meta)
    struct.pack_into("<I", m, len(m) - 4, zlib.crc32(bytes(m[:-4])))
    with open(path, "wb") as f:
        f.write(m)


def keep_section(secs):
    return next(s for s in secs if s["kind"] == KEEP)


def first_keep_field(buf, rb):
    """(record offset, payload length, offset of `fields`, offset of the KEEP value) of the
    first tag-4 insert with a KEEP field in a version-3 WAL file (format/wal.md)."""
    o = 52
    while o + 17 <= len(buf):
        _crc, length, rtype = struct.unpack_from("<IIB", buf, o)
        if rtype not in (1, 2):
            return None
        p, end = o + 17, o + 17 + length
        count = struct.unpack_from("<I", buf, p)[0] if rtype == 1 else 0
        p += 4
        for _ in range(count):
            tag = buf[p]
            p += 1
            if tag == 2:
                p += 8
                continue
            _docno, key_len = struct.unpack_from("<QI", buf, p)
            p += 12 + key_len
            p += 2 + 8 * struct.unpack_from("<H", buf, p)[0] + rb
            fields_at, fields = p, buf[p]
            p += 1
            if fields & 1:
                p += 4 + struct.unpack_from("<I", buf, p)[0]
            if fields & 2:
                p += 16
            if fields & 4:
                return o, length, fields_at, p
            if fields & 8:
                p += 4
        o = end
    return None


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: keep_column_check.py MHDB_BINARY [WORK_DIR]", file=sys.stderr)
        return 2
    mhdb = os.path.abspath(argv[1])
    work = argv[2] if len(argv) == 3 else tempfile.mkdtemp(prefix="mhdb-keep-")
    os.makedirs(work, exist_ok=True)
    c = Check(mhdb, work)
    t = texts(220, 1)
    cases = [
        ("i64", "i64", rows_of("i", t[0:], [3, None, -7, MISSING, 2**63 - 1, -(2**63), 0, 42])),
        ("f64", "f64", rows_of("f", t[20:], [3.5, None, -7, MISSING, -0.0, 2**53, 1e-300, 1.7976931348623157e308, 0.1])),
        ("string", "string", rows_of("s", t[40:], ["apple", None, "", MISSING, "Straße über", "x" * 65535, "zebra",
                                                  "\u0000nul", "🦀"])),
        ("string-150", "string", rows_of("m", [x + " more" for x in t[60:210]],
                                         [None if i % 5 == 0 else f"v{i:04d}" * (i % 7) for i in range(150)])),
    ]
    built = []
    for tag, ty, rows in cases:
        kt = "i64" if ty == "i64" else None
        want = expected(rows, ty)
        wal = c.build(f"{tag}-wal", [rows], keep_type=kt)
        c.check_values(wal, want, ty, "score", f"{tag}, in the WAL")
        seg = c.build(f"{tag}-compacted", [rows], keep_type=kt, compact=True)
        c.check_values(seg, want, ty, "score", f"{tag}, compacted into a segment")
        bulk = c.build(f"{tag}-bulk", [rows], keep_type=kt, novel=False)
        c.check_values(bulk, want, ty, "score", f"{tag}, bulk-added into a segment")
        built.append((tag, ty, rows, wal, seg))
    # WAL, a segment, upserts, a bulk segment, deletes; then compacted, then exported.
    first = [{"id": f"x{i}", "text": t[100 + i], "score": i * 10 if i % 3 else None} for i in range(30)]
    upserts = [{"id": f"x{i}", "text": t[100 + i] + " changed", "score": -i} for i in range(0, 30, 4)]
    bulk = [{"id": f"y{i}", "text": t[140 + i], "score": i} for i in range(10)]
    db = os.path.join(work, "mixed")
    shutil.rmtree(db, ignore_errors=True)
    c.must([mhdb, "create", db])
    for i, (rows, args) in enumerate([(first, ["--keep-type", "i64", "--novel-only", "--threshold", "1.0"]), (None, None),
                                      (upserts, ["--novel-only", "--threshold", "1.0"]), (bulk, [])]):
        if rows is None:
            c.must([mhdb, "compact", db])
            continue
        write_jsonl(f"{db}-{i}.jsonl", rows)
        c.must([mhdb, "add", db, f"{db}-{i}.jsonl", "--keep-field", "score", *args])
    c.must([mhdb, "delete", db, "x1", "x2", "y3"])
    want = {r["id"]: r["score"] for r in first + upserts + bulk}
    for k in ("x1", "x2", "y3"):
        del want[k]
    c.check_values(db, want, "i64", "score", "mixed (WAL, segments, upserts, deletes)")
    exported = os.path.join(work, "mixed-exported")
    shutil.rmtree(exported, ignore_errors=True)
    c.must([mhdb, "export", db, exported])
    c.check_values(exported, want, "i64", "score", "mixed, exported")
    c.must([mhdb, "compact", db])
    c.check_values(db, want, "i64", "score", "mixed, compacted")

    for tag, ty, rows, wal, seg in built:
        c.segment_damage(seg, tag, ty, rows)
        c.wal_damage(wal, tag, ty)
    c.manifest_damage(built[0][4])
    print(f"keep column check: {c.count - len(c.failures)} of {c.count} checks passed (work directory {work})")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
