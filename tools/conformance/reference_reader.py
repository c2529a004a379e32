#!/usr/bin/env python3
"""An independent reader of the mhdb on-disk format, versions 1 to 3, written from format/*.md alone.

It opens a database directory the way a read-only opener does (format/commit.md, "Open"):
CURRENT -> manifest -> segments (version 2: with their signatures), deletion list, (version 1:
signature log) -> replay of the WAL files, and prints every live key with its stored packed
signature as JSON. It checks every checksum it meets (CURRENT, manifest, segment metadata,
sections and, version 2, every 4 KiB block against CHECKSUMS; deletion list; WAL headers and
records; version 1: the signature-log header and per-segment record ranges) and the structural
rules the spec states (version 2 WAL: `first_seq` from the manifest's `wal_next_seq`, batch
records numbered exactly +1 across files, seals that end a file and count its batches, every
WAL file but the newest sealed), and exits with status 1 and a message naming the file and
offset on the first violation. It never writes to the directory.

Version 3 (format/manifest.md, segment.md and wal.md, "Version 3") adds what ties every file to
its database, and this reader checks it as `Db::open` does: the manifest's identity (never all
zero), feature bits, the 82-byte parameter block with its banding and the codes it reserves
(refused, like every unknown bit, as unsupported); each segment's 96-byte header (flags,
`db_id` against the manifest's, `file_id` against the file's name) and its `meta_crc` against
the manifest entry's; the deletion list's version-2 header and its `crc` against `del_crc`;
each WAL file's 52-byte header (flags, `db_id`, `file_id`) and its records' checksums seeded
with `db_id ‖ LE64(file_id)`, whose inserts are op tag 4 with a field mask. From version 2 on
it also makes the manifest's cross-checks (`wal_start` against `next_file_id`, no record at
or past `wal_next_seq` in a WAL file below `wal_start`, a WAL delete naming a live document).

An index whose manifest sets `store_sets` (format/hashing.md §14) also has its stored shingle
sets read: each segment's SHINGLES section (the offset table and every coded set, each rule of
format/segment.md checked) and the coded set of each WAL insert (op tag 3, which such an index
uses instead of tag 1: either tag in the wrong index is an error). Each live key is then
printed with a digest of its set (count, first, last, sum mod 2^64, CRC-32 of the values as LE
u32), or with the values themselves under `--sets`.

An index with the KEEP column (manifest feature bit 3, `keep_type` and `keep_field` in the
parameter block) has each segment's KEEP section read and checked (format/segment.md, KEEP:
presence bitmap, 8-byte rows or the string offset table, no NaN) and each WAL insert's KEEP
field decoded; every live key is then printed with its `keep` value (null without one; a
string as text, or `hex:` and its bytes when not UTF-8), and `--check` compares it with an
expected entry's `keep` when that entry has one. The EXACT_HASH and SET_SIZE columns are
checked, not printed.

    python3 tools/conformance/reference_reader.py DB_DIR                 # live keys and signatures as JSON
    python3 tools/conformance/reference_reader.py DB_DIR --sets          # ... with every stored set's values
    python3 tools/conformance/reference_reader.py DB_DIR --check EXPECTED.json

`--check` compares the live keys and signatures with EXPECTED.json (the shape printed by the
first form; `tests/golden/db-v1.expected.json` and `db-v2.expected.json` have it, plus the
deleted keys that must be absent and, for version 2, each WAL file's batch records and seal)
and prints `reference reader: N keys, M signatures, K checksums agree` or the differences.
`db-v2-sets.expected.json` adds each live key's set digest and dedup pairs, whose exact
Jaccard this reader recomputes from the two sets it decoded and whose estimate it recomputes
from the two signatures (format/hashing.md §7).
`db-v3.expected.json` adds the database's identity.
`tests/golden_db_v1.rs`, `tests/golden_db_v2.rs`, `tests/golden_db_v2_sets.rs` and `tests/golden_db_v3.rs` check the same fixtures through the
library, so a passing pair means the code and the spec agree on every byte of a fixture.

Python 3 standard library only. If this script and mhdb ever disagree, one of them no longer
follows the spec.
"""

import json
import math
import os
import re
import struct
import sys
import zlib

# Database format versions this reader knows (format/README.md, "Versions"). A database is of
# the version of its manifest; every file it names is of that version's layouts (the deletion
# list is version 1 in versions 1 and 2, version 2 in version 3).
FORMAT_VERSIONS = (1, 2, 3)
BLOCK_LEN = 4096
M64 = (1 << 64) - 1
MAX_KEY = 64 * 1024
MAX_WAL_PAYLOAD = 64 * 1024 * 1024
WAL_BATCH, WAL_SEAL = 1, 2
# Segment section kinds (format/segment.md).
KEY_BLOB, DOC_TABLE, KEY_INDEX, BAND, HOT, SIGNATURES, SHINGLES, CHECKSUMS = 1, 2, 3, 4, 5, 6, 7, 8
EXACT_HASH, KEEP, SET_SIZE = 9, 10, 11
BAND_FILTER = 12
# BAND_FILTER's filter kinds (width_a): 1 is a blocked Bloom filter; 2 and 3 (binary fuse) are
# reserved, and refused as unsupported like any other.
BLOCKED_BLOOM = 1
# The manifest's scheme codes (format/manifest.md; 16-18: signatures made by datasketch,
# format/hashing.md §11).
SCHEMES = {1: "oph", 2: "kperm", 16: "datasketch-legacy", 17: "datasketch-affine32", 18: "datasketch-affine64"}
# Version 3 (format/manifest.md, "Version 3"): the manifest's feature bits this reader reads;
# every unknown bit is refused as unsupported.
STORE_SETS, SETS_KEYED_V2, EXACT_HASH_FEATURE, COPIED_PAST_DAMAGE = 1 << 0, 1 << 1, 1 << 2, 1 << 6
KEEP_FEATURE, SET_SIZE_FEATURE = 1 << 3, 1 << 4
BAND_FILTERS_FEATURE = 1 << 5
FEATURE_NAMES = {2: "EXACT_HASH", 3: "KEEP", 4: "SET_SIZE", 5: "BAND_FILTERS"}
# The KEEP column's types (the manifest's keep_type, the KEEP section's width_a), and the
# longest string value (format/segment.md, KEEP).
KEEP_TYPES = {1: "i64", 2: "f64", 3: "string"}
KEEP_CODES = {name: code for code, name in KEEP_TYPES.items()}
MAX_KEEP_STRING = 65535
# Shingle flags: NFKC, lowercase, collapse white space; fold punctuation and digits (bits 3
# and 4) only with Unicode words (shingle kind 3), whose segmentation tables are Unicode 16.0.0.
SHINGLE_FLAGS, FOLD_FLAGS, UNICODE_VERSION = 0b111, 0b11000, 0x100000


class FormatError(Exception):
    pass


def crc32(data):
    return zlib.crc32(data) & 0xFFFFFFFF


# ---------------------------------------------------------------------------------------------
# XXH3-64 with seed 0 (the KEY_INDEX hash, format/segment.md). xxHash >= 0.8.0, written out
# so that the reader needs nothing beyond the standard library.

_SECRET = bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
    "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
    "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e"
)
_P32_1, _P32_2, _P32_3 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D
_P64_1, _P64_2, _P64_3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_P64_4, _P64_5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def _r32(b, o):
    return int.from_bytes(b[o : o + 4], "little")


def _r64(b, o):
    return int.from_bytes(b[o : o + 8], "little")


def _fold(a, b):
    p = a * b
    return (p & M64) ^ (p >> 64)


def _avalanche(h):
    h ^= h >> 37
    h = (h * 0x165667919E3779F9) & M64
    return h ^ (h >> 32)


def _xxh64_avalanche(h):
    h ^= h >> 33
    h = (h * _P64_2) & M64
    h ^= h >> 29
    h = (h * _P64_3) & M64
    return h ^ (h >> 32)


def _mix16(data, o, s):
    return _fold(_r64(data, o) ^ _r64(_SECRET, s), _r64(data, o + 8) ^ _r64(_SECRET, s + 8))


def xxh3_64(data):
    n = len(data)
    if n == 0:
        return _xxh64_avalanche(_r64(_SECRET, 56) ^ _r64(_SECRET, 64))
    if n <= 3:
        combo = (data[0] << 16) | (data[n >> 1] << 24) | data[n - 1] | (n << 8)
        return _xxh64_avalanche(combo ^ (_r32(_SECRET, 0) ^ _r32(_SECRET, 4)))
    if n <= 8:
        v = (_r32(data, n - 4) + (_r32(data, 0) << 32)) & M64
        v ^= _r64(_SECRET, 8) ^ _r64(_SECRET, 16)
        v ^= ((v << 49) | (v >> 15)) & M64 ^ ((v << 24) | (v >> 40)) & M64
        v = (v * 0x9FB21C651E98DF25) & M64
        v ^= ((v >> 35) + n) & M64
        v = (v * 0x9FB21C651E98DF25) & M64
        return v ^ (v >> 28)
    if n <= 16:
        lo = _r64(data, 0) ^ (_r64(_SECRET, 24) ^ _r64(_SECRET, 32))
        hi = _r64(data, n - 8) ^ (_r64(_SECRET, 40) ^ _r64(_SECRET, 48))
        swapped = int.from_bytes(lo.to_bytes(8, "little"), "big")
        return _avalanche((n + swapped + hi + _fold(lo, hi)) & M64)
    if n <= 128:
        acc = (n * _P64_1) & M64
        pairs = [(0, n - 16)]
        if n > 32:
            pairs.append((16, n - 32))
        if n > 64:
            pairs.append((32, n - 48))
        if n > 96:
            pairs.append((48, n - 64))
        for i, (a, b) in enumerate(pairs):
            acc += _mix16(data, a, 32 * i) + _mix16(data, b, 32 * i + 16)
        return _avalanche(acc & M64)
    if n <= 240:
        acc = (n * _P64_1) & M64
        for i in range(8):
            acc += _mix16(data, 16 * i, 16 * i)
        acc = _avalanche(acc & M64)
        for i in range(8, n // 16):
            acc += _mix16(data, 16 * i, 16 * (i - 8) + 3)
        acc += _mix16(data, n - 16, 136 - 17)
        return _avalanche(acc & M64)
    acc = [_P32_3, _P64_1, _P64_2, _P64_3, _P64_4, _P32_2, _P64_5, _P32_1]

    def accumulate(off, s):
        for i in range(8):
            v = _r64(data, off + 8 * i)
            k = v ^ _r64(_SECRET, s + 8 * i)
            acc[i ^ 1] = (acc[i ^ 1] + v) & M64
            acc[i] = (acc[i] + (k & 0xFFFFFFFF) * (k >> 32)) & M64

    stripes_per_block = (len(_SECRET) - 64) // 8
    block = 64 * stripes_per_block
    blocks = (n - 1) // block
    for b in range(blocks):
        for s in range(stripes_per_block):
            accumulate(b * block + 64 * s, 8 * s)
        for i in range(8):
            a = acc[i] ^ (acc[i] >> 47) ^ _r64(_SECRET, len(_SECRET) - 64 + 8 * i)
            acc[i] = (a * _P32_1) & M64
    for s in range(((n - 1) - block * blocks) // 64):
        accumulate(blocks * block + 64 * s, 8 * s)
    accumulate(n - 64, len(_SECRET) - 64 - 7)
    result = (n * _P64_1) & M64
    for i in range(4):
        result += _fold(acc[2 * i] ^ _r64(_SECRET, 11 + 16 * i), acc[2 * i + 1] ^ _r64(_SECRET, 19 + 16 * i))
    return _avalanche(result & M64)


# ---------------------------------------------------------------------------------------------
# Helpers


def bits_below(n):
    """Bits needed for every value in 0..n (format/segment.md)."""
    return 0 if n <= 1 else (n - 1).bit_length()


def read_bits(buf, pos, width):
    """The width-bit field at stream bit `pos` (LSB-first bit stream, format/segment.md)."""
    if width == 0:
        return 0
    start = pos >> 3
    end = (pos + width + 7) >> 3
    return (int.from_bytes(buf[start:end], "little") >> (pos & 7)) & ((1 << width) - 1)


class Reader:
    def __init__(self, root):
        self.root = root
        self.checksums = 0
        self.blocks = 0
        self.exact_hashes = 0
        self.set_sizes = 0
        self.keep_values = 0
        self.notes = []
        self.sets_decoded = 0
        self.noncanonical = []  # varints longer than they need be (the spec neither asks nor forbids)

    # -- low level --------------------------------------------------------------------------

    def path(self, name):
        return os.path.join(self.root, name)

    def read(self, name):
        try:
            with open(self.path(name), "rb") as f:
                return f.read()
        except OSError as e:
            raise FormatError(f"{name}: cannot read: {e.strerror}")

    def fail(self, name, offset, detail):
        raise FormatError(f"{name}: offset {offset}: {detail}")

    def check_crc(self, name, offset, data, stored, what):
        got = crc32(data)
        if got != stored:
            self.fail(name, offset, f"{what} checksum mismatch: stored {stored:08x}, computed {got:08x}")
        self.checksums += 1

    def need(self, name, buf, end, what):
        if len(buf) < end:
            self.fail(name, len(buf), f"file ends inside {what} (needs {end} bytes, has {len(buf)})")

    def check_version(self, name, offset, version, what, known=FORMAT_VERSIONS):
        if version not in known:
            self.fail(name, offset, f"unsupported {what} version {version} (this reader knows {', '.join(map(str, known))})")

    def read_sealed(self, name, length, pinned_by, min_len, magic, what, known):
        """A file of known length that ends in a CRC-32 of every preceding byte, then starts
        with `magic` and a u32 version (the manifest and the deletion list). The CRC is
        checked before the version, so a damaged version reads as corruption."""
        buf = self.read(name)
        if len(buf) != length:
            self.fail(name, len(buf), f"length {len(buf)}, but {pinned_by} {length}")
        self.need(name, buf, min_len, "the fixed part")
        (stored,) = struct.unpack_from("<I", buf, len(buf) - 4)
        self.check_crc(name, len(buf) - 4, buf[:-4], stored, what)
        if buf[:8] != magic:
            self.fail(name, 0, f"bad magic {buf[:8]!r}")
        self.check_version(name, 8, struct.unpack_from("<I", buf, 8)[0], what, known)
        return buf

    # -- CURRENT and manifest (format/manifest.md) ------------------------------------------

    def read_current(self):
        name = "CURRENT"
        buf = self.read(name)
        if len(buf) != 36:
            self.fail(name, 0, f"length {len(buf)}, expected exactly 36")
        magic, version, gen, man_len, man_crc, crc = struct.unpack_from("<8sIQQII", buf, 0)
        self.check_crc(name, 32, buf[:32], crc, "CURRENT")
        if magic != b"MHDBCURR":
            self.fail(name, 0, f"bad magic {magic!r}")
        self.check_version(name, 8, version, "CURRENT")
        return version, gen, man_len, man_crc

    def read_params(self, name, buf, o, version, features=0):
        """The parameters (41 bytes in version 1, 81 in version 2, 82 with the bandings and the
        captured field's name in version 3) at offset o: (dict, end)."""
        metric = None
        if version == 3:
            return self.read_params_v3(name, buf, o, features)
        if version == 1:
            (spec, scheme, num_perm, seed, sk, sw, sf, bits, bands, rows, thr, cap) = struct.unpack_from(
                "<IBIQBBBBIIQI", buf, o
            )
            kind, band_slots, store_sets, key_fp, max_hamming, weighting = 1, num_perm, 0, bytes(32), 0, 0
            at = {"spec": o, "kind": o, "band_slots": o + 5, "scheme": o + 4, "num_perm": o + 5, "shingle": o + 17, "bits": o + 20, "bands": o + 21}
            end = o + 41
        else:
            (spec, kind, scheme, num_perm, band_slots, seed, sk, sw, sf, bits, bands, rows, thr, cap,
             store_sets, key_fp, max_hamming, weighting) = struct.unpack_from("<IBBIIQBBBBIIQIB32sBB", buf, o)
            at = {"spec": o, "kind": o + 4, "scheme": o + 5, "num_perm": o + 6, "band_slots": o + 10, "shingle": o + 22,
                  "bits": o + 25, "bands": o + 26, "store_sets": o + 46, "max_hamming": o + 79,
                  "weighting": o + 80}
            end = o + 81
            if sf & ~SHINGLE_FLAGS:
                # No version-2 writer sets another bit, and none will: damage, not a newer build.
                self.fail(name, o + 24, f"unknown shingle_flags bits {sf & ~SHINGLE_FLAGS:#x}")
        return self.check_params(name, at, end, version, (spec, kind, scheme, metric, num_perm, band_slots, seed, sk, sw, sf,
                                                          bits, bands, rows, thr, cap, store_sets, key_fp, max_hamming, weighting))

    def read_params_v3(self, name, buf, o, features):
        """Version 3's 82-byte parameter block, its bandings and captured field's name
        (format/manifest.md, "Version 3"): reserved codes are refused as unsupported, codes
        that contradict each other are corruption."""
        (spec, kind, scheme, metric, bits, num_perm, band_slots, seed, sk, sw, sf, uver, thr, cap,
         max_hamming, weighting, keep_type, keep_len, key_fp, nbandings) = struct.unpack_from("<IBBBBIIQBBHIQIBBBB32sH", buf, o)
        at = {"spec": o, "kind": o + 4, "scheme": o + 5, "num_perm": o + 8, "band_slots": o + 12, "shingle": o + 24,
              "bits": o + 7, "bands": o + 82, "store_sets": 36, "max_hamming": o + 44, "weighting": o + 45}
        fits = {1: (1, 3), 2: (2,)}.get(kind, ())
        if metric not in (1, 2, 3):
            self.fail(name, o + 6, f"unsupported metric code {metric}")
        if metric not in fits and kind in (1, 2):
            self.fail(name, o + 6, f"metric {metric} does not fit index kind {kind} (corruption)")
        if metric == 3 and not features & SET_SIZE_FEATURE:
            self.fail(name, o + 6, "the containment metric without feature SET_SIZE (corruption)")
        if sk == 4:
            self.fail(name, o + 24, "unsupported: shingle kind 4 (token lists) is reserved")
        if sf & ~(SHINGLE_FLAGS | FOLD_FLAGS):
            self.fail(name, o + 26, f"unsupported shingle_flags bits {sf & ~(SHINGLE_FLAGS | FOLD_FLAGS):#x}")
        if sf & FOLD_FLAGS and sk != 3:
            self.fail(name, o + 26, f"shingle_flags {sf:#x} fold punctuation or digits with shingle kind {sk} (corruption)")
        if sk == 3 and uver == 0:
            self.fail(name, o + 28, "unicode_version 0 with Unicode words (corruption)")
        if sk == 3 and uver != UNICODE_VERSION:
            self.fail(name, o + 28, f"unsupported unicode_version {uver:#x} (this reader knows {UNICODE_VERSION:#x})")
        if sk != 3 and uver:
            self.fail(name, o + 28, f"unicode_version {uver:#x} with shingle kind {sk} (corruption)")
        # The KEEP column: a type and a field name exactly with the feature (else corruption).
        if not features & KEEP_FEATURE and (keep_type or keep_len):
            self.fail(name, o + 46 if keep_type else o + 47,
                      f"keep_type {keep_type} / keep_field_len {keep_len} without the KEEP feature (corruption)")
        if features & KEEP_FEATURE and keep_type not in KEEP_TYPES:
            self.fail(name, o + 46, f"feature KEEP with keep_type {keep_type} (corruption)")
        if features & KEEP_FEATURE and not keep_len:
            self.fail(name, o + 47, "feature KEEP without a keep field (corruption)")
        if nbandings == 0:
            self.fail(name, o + 80, "banding_count 0 (corruption)")
        if nbandings > 1 and metric != 3:
            self.fail(name, o + 80, f"unsupported: {nbandings} bandings (several bandings are a containment index's)")
        self.need(name, buf, o + 82 + 24 * nbandings + keep_len, "the bandings")
        bandings = []
        for i in range(nbandings):
            b_at = o + 82 + 24 * i
            bands, rows, size_lo, size_hi = struct.unpack_from("<IIQQ", buf, b_at)
            if (size_lo, size_hi) != (0, M64):
                self.fail(name, b_at + 8, f"unsupported: a banding for set sizes {size_lo}..={size_hi} (a partition; reserved)")
            if metric == 3 and not (1 <= bands <= 0xFFFF and rows >= 1 and bands * rows <= band_slots):
                self.fail(name, b_at, f"containment banding {bands} bands x {rows} rows does not fit {band_slots} slots")
            bandings.append([bands, rows])
        if metric == 3:
            # The bands of a containment index are numbered flat, banding after banding
            # (format/containment.md, section 2): segments hold them all.
            bands, rows = sum(b for b, _ in bandings), 0
        store_sets = 1 if features & STORE_SETS else 0
        params, end = self.check_params(name, at, o + 82 + 24 * nbandings, 3, (spec, kind, scheme, metric, num_perm, band_slots, seed, sk, sw, sf,
                                                                   bits, bands, rows, thr, cap, store_sets, key_fp, max_hamming, weighting))
        if metric == 3:
            params["bandings"] = bandings
        if features & EXACT_HASH_FEATURE:
            params["exact_hash"] = True
        if features & BAND_FILTERS_FEATURE:
            params["band_filters"] = True
        if features & SET_SIZE_FEATURE:
            params["set_size"] = True
        if features & KEEP_FEATURE:
            try:
                field = buf[end : end + keep_len].decode("utf-8")
            except UnicodeDecodeError:
                self.fail(name, end, "the keep field's name is not UTF-8 (corruption)")
            params["keep_type"] = KEEP_TYPES[keep_type]
            params["keep_field"] = field
        return params, end + keep_len

    def check_params(self, name, at, end, version, fields):
        """The checks every version shares, and the parameters as this reader prints them."""
        (spec, kind, scheme, metric, num_perm, band_slots, seed, sk, sw, sf, bits, bands, rows, thr, cap,
         store_sets, key_fp, max_hamming, weighting) = fields
        if spec != 1:
            self.fail(name, at["spec"], f"unknown hash spec version {spec}")
        if kind not in (1, 2):
            self.fail(name, at["kind"], f"unknown index kind {kind}")
        if kind == 2:
            # SimHash-pigeonhole (manifest.md, "Index kind 2"): no MinHash scheme; the
            # signature is the 64-bit fingerprint as 64 one-bit slots; max_hamming + 1 blocks
            # are the bands, with no rows.
            if scheme != 0:
                self.fail(name, at["scheme"], f"scheme code {scheme} on a SimHash index (must be 0)")
            if (num_perm, band_slots, bits) != (64, 64, 1):
                self.fail(name, at["num_perm"], f"a SimHash index stores 64 one-bit slots, not num_perm {num_perm}, band_slots {band_slots}, bits {bits}")
            if not 0 <= max_hamming <= 15 or bands != max_hamming + 1 or rows != 0:
                self.fail(name, at["bands"], f"{bands} bands x {rows} rows for max_hamming {max_hamming} (need max_hamming + 1 bands, 0 rows)")
            if weighting not in (1, 2):
                self.fail(name, at["weighting"], f"unknown SimHash weighting {weighting}")
        elif scheme not in SCHEMES:
            self.fail(name, at["scheme"], f"unknown scheme {scheme}")
        if sk not in ((1, 2, 3) if version == 3 else (1, 2)):
            self.fail(name, at["shingle"], f"unknown shingle kind {sk}")
        if bits not in (1, 2, 4, 8, 16, 32, 64):
            self.fail(name, at["bits"], f"bits {bits} is not one of 1, 2, 4, 8, 16, 32, 64")
        if not 1 <= num_perm <= 8192:
            self.fail(name, at["num_perm"], f"num_perm {num_perm} outside 1..=8192")
        if not 1 <= band_slots <= num_perm:
            self.fail(name, at["band_slots"], f"band_slots {band_slots} outside 1..=num_perm {num_perm}")
        if kind == 1 and metric != 3 and (bands < 1 or rows < 1 or bands * rows > band_slots):
            self.fail(name, at["bands"], f"{bands} bands x {rows} rows do not fit {band_slots} slots")
        if store_sets not in (0, 1):
            self.fail(name, at["store_sets"], f"store_sets {store_sets} is neither 0 nor 1")
        if kind == 1 and (max_hamming != 0 or weighting != 0):
            self.fail(name, at["max_hamming"], f"max_hamming {max_hamming} or weighting {weighting} on a MinHash index")
        params = {
            "spec_version": spec,
            "scheme": SCHEMES[scheme] if kind == 1 else None,
            "num_perm": num_perm,
            "seed": seed,
            "shingle": {1: "char", 2: "word", 3: "unicode-words"}[sk] + f":{sw}",
            "shingle_flags": sf,
            "bits": bits,
            "bands": bands,
            "rows": rows,
            "threshold": struct.unpack("<d", struct.pack("<Q", thr))[0],
            "bucket_cap": cap,
        }
        if version >= 2:
            # Keyed hashing changes how text becomes a signature, not how stored ones are read.
            params.update({"index_kind": "minhash-lsh", "band_slots": band_slots, "keyed": any(key_fp),
                           "store_sets": store_sets == 1})
            if kind == 2:
                params.update({"index_kind": "simhash-pigeonhole", "max_hamming": max_hamming,
                               "weighting": {1: "tf", 2: "logtf"}[weighting]})
        if metric is not None:
            params["metric"] = {1: "jaccard", 2: "cosine", 3: "containment"}[metric]
        return params, end

    def read_manifest(self):
        cur_version, gen, man_len, man_crc = self.read_current()
        name = f"MANIFEST-{gen:016x}"
        min_len = {1: 125, 2: 164, 3: 218}[cur_version]
        buf = self.read_sealed(name, man_len, "CURRENT pins", min_len, b"MHDBMANI", "manifest", FORMAT_VERSIONS)
        self.check_crc(name, 0, buf, man_crc, "manifest (CURRENT's pin)")
        (version, mgen) = struct.unpack_from("<IQ", buf, 8)
        if version != cur_version:
            self.fail(name, 8, f"manifest version {version}, but CURRENT carries {cur_version}")
        if mgen != gen:
            self.fail(name, 12, f"generation {mgen} differs from the name's {gen}")
        db_id, features = bytes(16), 0
        if version == 3:
            db_id, features = self.read_identity_and_features(name, buf)
            params, o = self.read_params(name, buf, 44, version, features)
            if features & SETS_KEYED_V2 and not (features & STORE_SETS and params["keyed"]):
                self.fail(name, 36, "SETS_KEYED_V2 without stored sets and a key (corruption)")
        else:
            params, o = self.read_params(name, buf, 20, version)
        self.need(name, buf, o + 64 if version == 3 else o + 60, "the state")
        del_crc = 0
        if version == 1:
            state = struct.unpack_from("<7QI", buf, o)
            next_docno, siglog_records, wal_start, next_file_id, del_id, del_count, del_len, nseg = state
            wal_next_seq = None
            if siglog_records != next_docno:
                self.fail(name, o + 8, f"siglog_records {siglog_records} differs from next_docno {next_docno}")
            entry_len = 44
        else:
            state = struct.unpack_from("<7QI", buf, o)
            next_docno, wal_start, wal_next_seq, next_file_id, del_id, del_count, del_len, nseg = state
            entry_len = 40
            if version == 3:
                next_docno, wal_start, wal_next_seq, next_file_id, del_id, del_count, del_len, del_crc, nseg = struct.unpack_from("<7QII", buf, o)
                entry_len = 44
        del_at = o + 32
        o += 64 if version == 3 else 60
        if version >= 2:
            # Cross-checks (format/v3-design.md, "Manifest cross-checks"): WAL files from
            # wal_start on are the ones replayed, numbered from wal_next_seq.
            if wal_start > next_file_id:
                self.fail(name, del_at - 24, f"wal_start {wal_start} above next_file_id {next_file_id}")
            if wal_next_seq < 1:
                self.fail(name, del_at - 16, "wal_next_seq 0")
        if len(buf) != o + entry_len * nseg + 4:
            self.fail(name, o - 4, f"{nseg} segment entries do not fill a {len(buf)}-byte manifest")
        segments = []
        prev_end = 0
        for i in range(nseg):
            sid, base, span, docs, flen = struct.unpack_from("<5Q", buf, o)
            scrc = struct.unpack_from("<I", buf, o + 40)[0] if version in (1, 3) else None
            if base < prev_end:
                self.fail(name, o, f"segment entry {i}: range overlaps or is out of order")
            if base + span > next_docno:
                self.fail(name, o, f"segment entry {i}: range [{base}, {base + span}) reaches past next_docno")
            if sid >= next_file_id:
                self.fail(name, o, f"segment entry {i}: id {sid} not below next_file_id {next_file_id}")
            if docs > span:
                self.fail(name, o, f"segment entry {i}: {docs} documents in a span of {span}")
            prev_end = base + span
            segments.append({"id": sid, "base": base, "span": span, "docs": docs, "file_len": flen, "siglog_crc": scrc, "entry_offset": o,
                             "meta_crc": scrc if version == 3 else None})
            o += entry_len
        if del_id and del_id >= next_file_id:
            self.fail(name, del_at, f"deletion list id {del_id} not below next_file_id {next_file_id}")
        if not del_id and (del_count or del_len or del_crc):
            self.fail(name, del_at, "no deletion list, but a count, length or checksum")
        return {
            "name": name,
            "version": version,
            "db_id": db_id,
            "features": features,
            "del_crc": del_crc,
            "generation": gen,
            "params": params,
            "next_docno": next_docno,
            "wal_start": wal_start,
            "wal_next_seq": wal_next_seq,
            "next_file_id": next_file_id,
            "del": (del_id, del_count, del_len),
            "del_at": del_at,
            "segments": segments,
        }

    def read_identity_and_features(self, name, buf):
        """Version 3's identity (all zero is corruption) and feature bits (reserved and unknown
        bits are refused as unsupported)."""
        db_id = buf[20:36]
        if not any(db_id):
            self.fail(name, 20, "db_id is all zero (corruption: every version-3 database has an identity)")
        (features,) = struct.unpack_from("<Q", buf, 36)
        for bit in range(64):
            if features >> bit & 1 and not (1 << bit) & (STORE_SETS | SETS_KEYED_V2 | EXACT_HASH_FEATURE | KEEP_FEATURE
                                                         | SET_SIZE_FEATURE | BAND_FILTERS_FEATURE | COPIED_PAST_DAMAGE):
                what = FEATURE_NAMES.get(bit, "unknown")
                self.fail(name, 36, f"unsupported feature bit {bit} ({what})")
        return db_id, features

    def read_deletions(self, m):
        del_id, count, length = m["del"]
        if del_id == 0:
            return []
        name = f"del-{del_id:016x}.del"
        buf = self.read_sealed(name, length, "the manifest records", 24, b"MHDBDELS", "deletion list", (1, 2))
        (list_version,) = struct.unpack_from("<I", buf, 8)
        # A database of version 3 has deletion lists of version 2 (with its identity), older
        # ones of version 1 (format/manifest.md, "Deletion list version 2").
        if list_version != (2 if m["version"] == 3 else 1):
            self.fail(name, 8, f"a version-{list_version} deletion list in a version-{m['version']} database (corruption)")
        head = 20
        if list_version == 2:
            head = 48
            self.need(name, buf, 52, "the version-2 header")
            flags, file_id = struct.unpack_from("<I16xQ", buf, 12)
            if flags:
                self.fail(name, 12, f"unsupported flags {flags:#x}")
            self.check_identity(name, 16, buf[16:32], m["db_id"])
            if file_id != del_id:
                self.fail(name, 32, f"file_id {file_id:016x}, but the file is {name} (a renamed file)")
            (stored,) = struct.unpack_from("<I", buf, len(buf) - 4)
            if stored != m["del_crc"]:
                self.fail(name, len(buf) - 4, f"crc {stored:08x}, but the manifest pins del_crc {m['del_crc']:08x} (another list of this database)")
        (n,) = struct.unpack_from("<Q", buf, head - 8)
        if n != count:
            self.fail(name, head - 8, f"count {n}, but the manifest records {count}")
        if len(buf) != head + 8 * n + 4:
            self.fail(name, head - 8, f"{n} entries do not fill {len(buf)} bytes")
        docnos = list(struct.unpack_from(f"<{n}Q", buf, head))
        for i in range(1, n):
            if docnos[i] <= docnos[i - 1]:
                self.fail(name, head + 8 * i, "document numbers not strictly increasing")
        return docnos

    def check_identity(self, name, offset, found, db_id):
        if found != db_id:
            self.fail(name, offset, f"belongs to database {found.hex()}, not to this database ({db_id.hex()})")

    # -- signature log (format/siglog.md) ---------------------------------------------------

    def read_siglog(self, params, records):
        name = "signatures.log"
        buf = self.read(name)
        self.need(name, buf, 64, "the header")
        magic, version, num_perm, bits, rb, crc = struct.unpack_from("<8sIIIII", buf, 0)
        self.check_crc(name, 24, buf[:24], crc, "signature log header")
        if magic != b"MHDBSIGL":
            self.fail(name, 0, f"bad magic {magic!r}")
        self.check_version(name, 8, version, "signature log", (1,))
        if (num_perm, bits) != (params["num_perm"], params["bits"]):
            self.fail(name, 12, f"num_perm/bits {num_perm}/{bits} differ from the manifest's")
        if rb != (num_perm * bits + 7) // 8:
            self.fail(name, 20, f"record_bytes {rb} is not ceil({num_perm} x {bits} / 8)")
        if any(buf[28:64]):
            self.fail(name, 28, "header padding is not zero")
        committed = 64 + records * rb
        if len(buf) < committed:
            self.fail(name, len(buf), f"shorter than the {records} committed records ({committed} bytes)")
        if len(buf) > committed:
            self.notes.append(f"{name}: {len(buf) - committed} bytes past the committed records (an interrupted flush; ignored)")
        return buf[:committed], rb

    # -- segments (format/segment.md) -------------------------------------------------------

    def read_segment(self, entry, params, db_version, db_id):
        """The documents (docno, key, packed signature or None in version 1) of one segment."""
        bands = params["bands"]
        name = f"seg-{entry['id']:016x}.seg"
        buf = self.read(name)
        n = len(buf)
        if n != entry["file_len"]:
            self.fail(name, n, f"length {n}, but the manifest records {entry['file_len']}")
        if n < 96:
            self.fail(name, 0, f"length {n} is below the minimum of 96")
        magic, version, flags, nb, cap, base, span, doc_count, record_bytes = struct.unpack_from("<8sIIIIQQQI", buf, 0)
        if magic != b"MHDBSEG\0":
            self.fail(name, 0, f"bad header magic {magic!r}")
        tab_off, nsec, fres, flen, meta_crc, fmagic = struct.unpack_from("<QIIQI4s", buf, n - 32)
        if fmagic != b"MHSF":
            self.fail(name, n - 4, f"bad footer magic {fmagic!r}")
        if flen != n:
            self.fail(name, n - 16, f"footer file_len {flen} differs from the length {n} (truncated?)")
        if nb < 1:
            self.fail(name, 16, "num_bands is 0")
        # Version 3's header is 96 bytes (with the identity), older ones 64.
        hdr = 96 if version == 3 else 64
        if tab_off < hdr or tab_off + 40 * nsec != n - 32:
            self.fail(name, n - 32, "the section table does not end at the footer")
        # meta_crc covers the version: judged only once it matched (damage is not a new version).
        meta = buf[:hdr] + buf[tab_off : n - 32] + buf[n - 32 : n - 8]
        self.check_crc(name, n - 8, meta, meta_crc, "segment metadata (meta_crc)")
        self.check_version(name, 8, version, "segment")
        if version != db_version:
            self.fail(name, 8, f"a version-{version} segment in a version-{db_version} database")
        # Version 2: the segments of an index that stores sets have SHINGLES, the others none.
        store_sets = params.get("store_sets", False)
        exact = params.get("exact_hash", False)
        # BAND_FILTER: one per band when the flag says so (version 3 only; a segment of an index
        # with the feature may lack them, one of an index without it must).
        filters = version == 3 and bool(flags >> 4 & 1)
        set_size = params.get("set_size", False)
        # KEEP: the manifest's keep type code (0 without the column).
        keep = KEEP_CODES.get(params.get("keep_type"), 0)
        fixed = 4 if version == 1 else 6 + int(store_sets) + int(exact) + int(bool(keep)) + int(set_size) + (nb if filters else 0)
        if nsec != nb + fixed:
            self.fail(name, n - 24, f"{nsec} sections, expected num_bands + {fixed} = {nb + fixed}"
                      + (" (the manifest's store_sets is 1: SHINGLES is one of them)" if store_sets else ""))
        if version == 3:
            self.check_segment_v3(name, buf, entry, flags, (store_sets, exact, bool(keep), set_size, params.get("band_filters", False)), db_id, meta_crc)
        elif flags:
            self.fail(name, 12, f"flags {flags:#x} are not 0")
        if any(buf[52:64] if version < 3 else buf[52:56] + buf[80:96]) or (version == 1 and record_bytes):
            self.fail(name, 48, "reserved header bytes are not zero")
        # A database's segments carry the signatures of its documents (format/segment.md,
        # SIGNATURES; the manifest's num_perm and bits give their size, format/hashing.md §7).
        sig_bytes = (params["num_perm"] * params["bits"] + 7) // 8
        if version >= 2 and record_bytes != sig_bytes:
            self.fail(name, 48, f"record_bytes {record_bytes}, but the manifest's signatures are {sig_bytes} bytes")
        if fres:
            self.fail(name, n - 20, "reserved footer field is not 0")
        if nb != bands:
            self.fail(name, 16, f"{nb} bands, the manifest says {bands}")
        if (base, span, doc_count) != (entry["base"], entry["span"], entry["docs"]):
            self.fail(name, 24, f"range/doc count ({base}, {span}, {doc_count}) differ from the manifest entry")
        if doc_count > span:
            self.fail(name, 40, f"doc_count {doc_count} exceeds span {span}")
        if base + span > M64:
            self.fail(name, 32, "base + span overflows u64")

        # Section order: KEY_BLOB, DOC_TABLE, KEY_INDEX, BAND 0..b-1, HOT, then (version 2)
        # SHINGLES (only with store_sets), SIGNATURES and CHECKSUMS.
        order = [KEY_BLOB, DOC_TABLE, KEY_INDEX] + [BAND] * nb + [HOT]
        if version >= 2:
            order += ([SHINGLES] if store_sets else []) + ([EXACT_HASH] if exact else []) + ([KEEP] if keep else [])
            order += ([SET_SIZE] if set_size else []) + ([BAND_FILTER] * nb if filters else []) + [SIGNATURES, CHECKSUMS]
        first_filter = 4 + nb + int(store_sets) + int(exact) + int(bool(keep)) + int(set_size)
        sections = []
        expect_off = hdr
        for i in range(nsec):
            eo = tab_off + 40 * i
            kind, wa, wb, index, off, ln, count, scrc, res = struct.unpack_from("<HBBIQQQII", buf, eo)
            if kind != order[i]:
                self.fail(name, eo, f"section {i} has kind {kind}, expected {order[i]}")
            if index != (i - 3 if kind == BAND else i - first_filter if kind == BAND_FILTER else 0):
                self.fail(name, eo + 4, f"section {i} has index {index}")
            if res:
                self.fail(name, eo + 36, f"section {i}: reserved field is not 0")
            if off != expect_off:
                self.fail(name, eo + 8, f"section {i} starts at {off}, expected {expect_off} (sections are contiguous)")
            if off + ln > tab_off:
                self.fail(name, eo + 16, f"section {i} runs past the section table")
            expect_off = off + ln
            sections.append((kind, wa, wb, count, off, buf[off : off + ln], eo, scrc))
        if expect_off != tab_off:
            self.fail(name, tab_off, "the last section does not end at the section table")

        if version >= 2:
            # CHECKSUMS first (the chain footer -> section table -> block CRCs -> blocks): one
            # CRC per 4 KiB block of every byte from the header's end (64, version 3: 96) up to
            # this section, the blocks aligned with the file's pages (block j: bytes
            # max(64, 4096 j) .. min(4096 (j + 1), off)).
            kind, wa, wb, count, off, table, eo, scrc = sections[-1]
            blocks = (off + BLOCK_LEN - 1) // BLOCK_LEN
            if (wa, wb) != (0, 0) or count != blocks or len(table) != 4 * blocks:
                self.fail(name, eo, f"CHECKSUMS widths/count/len ({wa}, {wb}, {count}, {len(table)}), expected (0, 0, {blocks}, {4 * blocks})")
            self.check_crc(name, eo + 32, table, scrc, "section CHECKSUMS")
            for j in range(blocks):
                lo = max(hdr, BLOCK_LEN * j)
                hi = min(BLOCK_LEN * (j + 1), off)
                (stored,) = struct.unpack_from("<I", table, 4 * j)
                self.check_crc(name, lo, buf[lo:hi], stored, f"block {j} (bytes {lo}..{hi})")
            self.blocks += blocks
        for i, (kind, wa, wb, count, off, data, eo, scrc) in enumerate(sections[:-1] if version >= 2 else sections):
            self.check_crc(name, eo + 32, data, scrc, f"section {i} (kind {kind})")
        sections = [sec[:7] for sec in sections]

        # KEY_BLOB
        kind, wa, wb, count, off, blob, eo = sections[0]
        if (wa, wb) != (0, 0) or count != len(blob):
            self.fail(name, eo, "KEY_BLOB widths must be 0 and count must equal len")
        total_key = len(blob)
        d_bits = bits_below(span)
        e_bits = total_key.bit_length()

        # DOC_TABLE
        kind, wa, wb, count, off, table, eo = sections[1]
        if (wa, wb, count) != (d_bits, e_bits, doc_count):
            self.fail(name, eo, f"DOC_TABLE widths/count ({wa}, {wb}, {count}), expected ({d_bits}, {e_bits}, {doc_count})")
        rec = d_bits + e_bits
        if len(table) != (doc_count * rec + 7) // 8:
            self.fail(name, eo + 16, "DOC_TABLE length does not match its formula")
        self.check_padding(name, off, table, doc_count * rec)
        docs = []
        prev_rel, prev_end = -1, 0
        for i in range(doc_count):
            rel = read_bits(table, i * rec, d_bits)
            end = read_bits(table, i * rec + d_bits, e_bits)
            if rel <= prev_rel or rel >= span:
                self.fail(name, off + (i * rec) // 8, f"doc table entry {i}: docno offset {rel} not increasing or outside the span")
            if end < prev_end or end > total_key:
                self.fail(name, off + (i * rec) // 8, f"doc table entry {i}: key_end {end} inconsistent with the blob")
            key = blob[prev_end:end]
            if len(key) > MAX_KEY:
                self.fail(name, off + (i * rec) // 8, f"doc table entry {i}: key of {len(key)} bytes")
            docs.append((base + rel, key))
            prev_rel, prev_end = rel, end
        if prev_end != total_key:
            self.fail(name, eo, f"the last key ends at {prev_end}, the blob has {total_key} bytes")
        rel_set = {d - base for d, _ in docs}

        # KEY_INDEX
        kind, wa, wb, count, off, data, eo = sections[2]
        if wb != bits_below(doc_count) or count != doc_count:
            self.fail(name, eo, "KEY_INDEX value width or count is wrong")
        entries = self.prefix_table(name, off, eo, data, wa, wb, count, "KEY_INDEX")
        seen = [False] * doc_count
        for i, (k32, ordinal) in enumerate(entries):
            if ordinal >= doc_count or seen[ordinal]:
                self.fail(name, off, f"KEY_INDEX entry {i}: ordinal {ordinal} out of range or repeated")
            seen[ordinal] = True
            h = xxh3_64(docs[ordinal][1]) >> 32
            if h != k32:
                self.fail(name, off, f"KEY_INDEX entry {i}: key32 {k32:08x} is not the top of XXH3_64(key) = {h:08x}")

        # BAND j
        buckets = {}
        for j in range(nb):
            kind, wa, wb, count, off, data, eo = sections[3 + j]
            if wb != d_bits:
                self.fail(name, eo, f"BAND {j}: value width {wb}, expected D = {d_bits}")
            entries = self.prefix_table(name, off, eo, data, wa, wb, count, f"BAND {j}")
            posted = set()
            for k32, rel in entries:
                if rel not in rel_set:
                    self.fail(name, off, f"BAND {j}: posting names docno {base + rel}, which is not stored")
                if rel in posted:
                    self.fail(name, off, f"BAND {j}: docno {base + rel} posted twice")
                posted.add(rel)
                buckets[(j, k32)] = buckets.get((j, k32), 0) + 1
        if cap:
            for (j, k32), size in buckets.items():
                if size > cap:
                    self.fail(name, 20, f"BAND {j} bucket {k32:08x} holds {size} postings, above the cap {cap}")

        # HOT
        kind, wa, wb, count, off, data, eo = sections[3 + nb]
        if (wa, wb) != (0, 0) or len(data) != 16 * count:
            self.fail(name, eo, "HOT widths must be 0 and len must be 16 x count")
        prev = None
        for i in range(count):
            band, k32, orig = struct.unpack_from("<IIQ", data, 16 * i)
            if prev is not None and (band, k32) <= prev:
                self.fail(name, off + 16 * i, "HOT records not strictly sorted by (band, key32)")
            if band >= nb:
                self.fail(name, off + 16 * i, f"HOT record names band {band} of {nb}")
            if orig < buckets.get((band, k32), 0):
                self.fail(name, off + 16 * i, "HOT original_size below the stored bucket size")
            prev = (band, k32)
            buckets.setdefault((band, k32), 0)

        if version == 1:
            return [(docno, key, None, None, None) for docno, key in docs]
        sets = [None] * doc_count
        if store_sets:
            sets = self.read_shingles(name, sections[4 + nb], doc_count)
        at = 4 + nb + int(store_sets)
        if params.get("exact_hash", False):
            self.exact_hashes += self.read_column(name, sections[at], doc_count, 16, "EXACT_HASH")
            at += 1
        keeps = [None] * doc_count
        if keep:
            keeps = self.read_keep(name, sections[at], doc_count, keep)
            at += 1
        if params.get("set_size", False):
            self.set_sizes += self.read_column(name, sections[at], doc_count, 4, "SET_SIZE")
            at += 1
        if filters:
            for j in range(nb):
                keys = {k32 for (band, k32) in buckets if band == j}
                self.read_band_filter(name, sections[at + j], j, keys)
        # SIGNATURES: record_bytes per document, in ordinal (docno) order.
        kind, wa, wb, count, off, data, eo = sections[-2]
        if (wa, wb) != (0, 0) or count != doc_count or len(data) != doc_count * record_bytes:
            self.fail(name, eo, f"SIGNATURES widths must be 0, count {doc_count} and len {doc_count} x {record_bytes}")
        return [(docno, key, data[i * record_bytes : (i + 1) * record_bytes], sets[i], keeps[i]) for i, (docno, key) in enumerate(docs)]

    def check_segment_v3(self, name, buf, entry, flags, columns, db_id, meta_crc):
        """Version 3's flags and identity (format/segment.md, "Header, version 3"), judged once
        meta_crc matched: SHINGLES present exactly with the manifest's STORE_SETS and EXACT_HASH
        with its EXACT_HASH, KEEP with its KEEP, SET_SIZE with its SET_SIZE, BAND_FILTER only
        with BAND_FILTERS, unknown flags refused as unsupported; the database's identity, the
        file's own number, and the manifest's pin of meta_crc."""
        store_sets, exact, keep, set_size, band_filters = columns
        if flags & ~0b11111:
            self.fail(name, 12, f"unsupported flags {flags & ~0b11111:#x} (unknown optional sections)")
        if flags >> 4 & 1 and not band_filters:
            self.fail(name, 12, f"flags {flags:#x}: BAND_FILTER bit set, but the manifest has no BAND_FILTERS feature")
        if flags & 1 != store_sets:
            self.fail(name, 12, f"flags {flags:#x}: SHINGLES bit {flags & 1}, but the manifest's STORE_SETS is {int(store_sets)}")
        if flags >> 1 & 1 != exact:
            self.fail(name, 12, f"flags {flags:#x}: EXACT_HASH bit {flags >> 1 & 1}, but the manifest's EXACT_HASH is {int(exact)}")
        if flags >> 2 & 1 != keep:
            self.fail(name, 12, f"flags {flags:#x}: KEEP bit {flags >> 2 & 1}, but the manifest's KEEP is {int(keep)}")
        if flags >> 3 & 1 != set_size:
            self.fail(name, 12, f"flags {flags:#x}: SET_SIZE bit {flags >> 3 & 1}, but the manifest's SET_SIZE is {int(set_size)}")
        self.check_identity(name, 56, buf[56:72], db_id)
        (file_id,) = struct.unpack_from("<Q", buf, 72)
        if file_id != entry["id"]:
            self.fail(name, 72, f"file_id {file_id:016x}, but the file is {name} (a renamed file)")
        if meta_crc != entry["meta_crc"]:
            self.fail(name, len(buf) - 8, f"meta_crc {meta_crc:08x}, but the manifest pins {entry['meta_crc']:08x} (another segment of this database)")

    def read_band_filter(self, name, section, band, keys):
        """A BAND_FILTER section (format/segment.md): a blocked Bloom filter, header
        `seed u64, block_count u32, probes u32`, then block_count 64-byte blocks; `count` is the
        distinct key32 values of the band's postings and hot records, every one of which the
        filter must report present (the probe rule is the format's)."""
        kind, wa, wb, count, off, data, eo = section
        if wa != BLOCKED_BLOOM:
            self.fail(name, eo + 2, f"unsupported: band filter kind {wa}")
        if wb != 0 or len(data) < 16:
            self.fail(name, eo, f"BAND_FILTER {band}: width_b {wb} or length {len(data)} below the 16-byte header")
        seed, blocks, probes = struct.unpack_from("<QII", data, 0)
        if blocks == 0 or not 1 <= probes <= 16:
            self.fail(name, off + 8, f"BAND_FILTER {band}: block count {blocks} or probes {probes} out of range")
        if len(data) != 16 + 64 * blocks:
            self.fail(name, eo + 16, f"BAND_FILTER {band}: {len(data)} bytes, its header says 16 + 64 x {blocks}")
        if count != len(keys):
            self.fail(name, eo + 24, f"BAND_FILTER {band}: count {count}, the band holds {len(keys)} distinct keys")
        salts = [mix64(i + 1) | 1 for i in range(probes)]
        for k32 in sorted(keys):
            h = mix64(k32 ^ seed)
            at = 16 + 64 * (((h >> 32) * blocks) >> 32)
            lo = h & 0xFFFFFFFF
            for i, salt in enumerate(salts):
                (word,) = struct.unpack_from("<Q", data, at + 8 * (i % 8))
                if not word >> (((lo * salt) & M64) >> 58) & 1:
                    self.fail(name, off + at, f"BAND_FILTER {band} reports key32 {k32:08x}, which the band holds, absent")

    def read_column(self, name, section, doc_count, width, label):
        """A per-document column section (format/segment.md: EXACT_HASH, 16-byte LE u128 rows;
        SET_SIZE, 4-byte LE u32 rows): a presence bitmap of ceil(doc_count / 64) LE u64 words,
        then doc_count rows; a bit past doc_count and bytes in a row without a value are
        corruption, and so is an exact hash of 0. Returns the number of rows with a value."""
        kind, wa, wb, count, off, data, eo = section
        words = (doc_count + 63) // 64
        if (wa, wb) != (0, 0) or count != doc_count or len(data) != 8 * words + width * doc_count:
            self.fail(name, eo, f"{label} widths/count/len ({wa}, {wb}, {count}, {len(data)}), expected"
                      f" (0, 0, {doc_count}, {8 * words + width * doc_count})")
        present = 0
        for r in range(doc_count):
            (word,) = struct.unpack_from("<Q", data, 8 * (r // 64))
            value = int.from_bytes(data[8 * words + width * r : 8 * words + width * (r + 1)], "little")
            at = off + 8 * words + width * r
            if word >> (r % 64) & 1:
                present += 1
                if value == 0 and kind == EXACT_HASH:
                    self.fail(name, at, f"row {r}: an exact hash of 0 (corruption)")
            elif value:
                self.fail(name, at, f"row {r} has no {label} value but non-zero bytes (corruption)")
        if doc_count % 64:
            (last,) = struct.unpack_from("<Q", data, 8 * (words - 1))
            if last >> (doc_count % 64):
                self.fail(name, off + 8 * (words - 1), f"{label} presence bit set past the last row (corruption)")
        return present

    def read_keep(self, name, section, doc_count, keep_type):
        """A KEEP section (format/segment.md): width_a the manifest's keep type, a presence
        bitmap of ceil(doc_count / 64) LE u64 words, then for i64 (1) and f64 (2, IEEE bits,
        never NaN) doc_count 8-byte LE rows, zeros in a row without a value; for strings (3)
        doc_count + 1 LE u64 offsets relative to the end of the offset table (starting at 0,
        never decreasing, ending at the length of the bytes after it, each range at most 65,535
        bytes and empty for a row without a value), then the bytes. Returns one value per
        ordinal: an int, a float, bytes, or None."""
        kind, wa, wb, count, off, data, eo = section
        words = (doc_count + 63) // 64
        rows_at = 8 * words
        if wa != keep_type or wb != 0 or count != doc_count:
            self.fail(name, eo, f"KEEP widths/count ({wa}, {wb}, {count}), expected ({keep_type}, 0, {doc_count})"
                      " (width_a is the manifest's keep type)")
        if keep_type == 3:
            if len(data) < rows_at + 8 * (doc_count + 1):
                self.fail(name, eo + 16, f"KEEP length {len(data)} is shorter than its bitmap and offset table"
                          f" ({rows_at + 8 * (doc_count + 1)} bytes)")
        elif len(data) != rows_at + 8 * doc_count:
            self.fail(name, eo + 16, f"KEEP length {len(data)}, expected {rows_at + 8 * doc_count}")
        if doc_count % 64:
            (last,) = struct.unpack_from("<Q", data, 8 * (words - 1))
            if last >> (doc_count % 64):
                self.fail(name, off + 8 * (words - 1), "KEEP presence bit set past the last row (corruption)")
        present = [bool(struct.unpack_from("<Q", data, 8 * (r // 64))[0] >> (r % 64) & 1) for r in range(doc_count)]
        values = []
        if keep_type == 3:
            offsets = struct.unpack_from(f"<{doc_count + 1}Q", data, rows_at)
            bytes_at = rows_at + 8 * (doc_count + 1)
            total = len(data) - bytes_at
            if offsets[0] != 0:
                self.fail(name, off + rows_at, f"KEEP offsets[0] is {offsets[0]}, not 0 (corruption)")
            for r in range(doc_count):
                start, end = offsets[r], offsets[r + 1]
                at = off + rows_at + 8 * r
                if end < start or end > total or end - start > MAX_KEEP_STRING:
                    self.fail(name, at, f"row {r}: keep value range {start}..{end} decreasing, past the {total} value bytes"
                              f" or longer than {MAX_KEEP_STRING} (corruption)")
                if not present[r] and end != start:
                    self.fail(name, at, f"row {r} has no keep value but {end - start} bytes (corruption)")
                values.append(data[bytes_at + start : bytes_at + end] if present[r] else None)
            if offsets[doc_count] != total:
                self.fail(name, off + rows_at + 8 * doc_count, f"KEEP offsets[{doc_count}] = {offsets[doc_count]}, but the"
                          f" values are {total} bytes (the section's end)")
        else:
            for r in range(doc_count):
                at = off + rows_at + 8 * r
                (bits,) = struct.unpack_from("<Q", data, rows_at + 8 * r)
                if not present[r]:
                    if bits:
                        self.fail(name, at, f"row {r} has no keep value but non-zero bytes (corruption)")
                    values.append(None)
                elif keep_type == 1:
                    values.append(bits - (1 << 64) if bits >> 63 else bits)
                else:
                    value = struct.unpack("<d", struct.pack("<Q", bits))[0]
                    if math.isnan(value):
                        self.fail(name, at, f"row {r}: a NaN keep value (corruption)")
                    values.append(value)
        self.keep_values += sum(present)
        return values

    def read_shingles(self, name, section, doc_count):
        """The stored shingle sets of a SHINGLES section (format/segment.md), one per ordinal:
        a table of doc_count + 1 u64 offsets relative to the table's end, then the coded sets."""
        kind, wa, wb, count, off, data, eo = section
        if (wa, wb) != (0, 0) or count != doc_count:
            self.fail(name, eo, f"SHINGLES widths/count ({wa}, {wb}, {count}), expected (0, 0, {doc_count})")
        table_len = 8 * (doc_count + 1)
        if len(data) < table_len:
            self.fail(name, eo + 16, f"SHINGLES length {len(data)} is shorter than its offset table ({table_len} bytes)")
        offsets = struct.unpack_from(f"<{doc_count + 1}Q", data, 0)
        coded_len = len(data) - table_len
        if offsets[0] != 0:
            self.fail(name, off, f"SHINGLES offsets[0] is {offsets[0]}, not 0")
        for i in range(doc_count):
            if offsets[i + 1] < offsets[i]:
                self.fail(name, off + 8 * (i + 1), f"SHINGLES offsets[{i + 1}] = {offsets[i + 1]} is below offsets[{i}] = {offsets[i]}")
        if offsets[doc_count] != coded_len:
            self.fail(name, off + 8 * doc_count, f"SHINGLES offsets[{doc_count}] = {offsets[doc_count]}, but the coded sets"
                      f" are {coded_len} bytes (len {len(data)} minus the {table_len}-byte table)")
        at = off + table_len
        return [self.decode_set(name, at + offsets[i], data[table_len + offsets[i] : table_len + offsets[i + 1]], f"the set of ordinal {i}")
                for i in range(doc_count)]

    def decode_set(self, name, at, coded, what):
        """A coded set (format/segment.md, SHINGLES): a LEB128 count, then the first value and
        the gaps v - previous - 1, each a varint of at most 5 bytes, every value below 2^32,
        nothing after the last. `at` is the coded set's absolute offset in file `name`."""
        pos = 0

        def varint(item):
            nonlocal pos
            start, value = pos, 0
            for i in range(5):
                if pos >= len(coded):
                    self.fail(name, at + pos, f"{what}: {len(coded)}-byte coded set ends inside {item}")
                b = coded[pos]
                pos += 1
                value |= (b & 0x7F) << (7 * i)
                if not b & 0x80:
                    if i and b == 0:
                        self.noncanonical.append(f"{name}: offset {at + start}: {what}: {item} coded in {i + 1} bytes, more than it needs")
                    return value
            self.fail(name, at + start, f"{what}: {item} is a varint longer than 5 bytes")

        count = varint("the count")
        if count > 0xFFFFFFFF:
            self.fail(name, at, f"{what}: count {count} does not fit in 32 bits")
        values = []
        prev = None
        for i in range(count):
            start = pos
            gap = varint(f"value {i} of {count}")
            v = gap if prev is None else prev + 1 + gap
            if v > 0xFFFFFFFF:
                self.fail(name, at + start, f"{what}: value {i} of {count} is {v}, beyond 32 bits")
            values.append(v)
            prev = v
        if pos != len(coded):
            self.fail(name, at + pos, f"{what}: {len(coded) - pos} byte(s) after the last of its {count} values")
        self.sets_decoded += 1
        return values

    def check_padding(self, name, off, data, used_bits):
        if used_bits % 8 and data[-1] >> (used_bits % 8):
            self.fail(name, off + len(data) - 1, "padding bits of the last byte are not zero")

    def prefix_table(self, name, off, eo, data, p, v, n, what):
        if p > 28:
            self.fail(name, eo + 2, f"{what}: prefix bits {p} > 28")
        slots = 1 << p
        w = 32 - p + v
        size = 4 * (slots + 1) + (n * w + 7) // 8
        if len(data) != size:
            self.fail(name, eo + 16, f"{what}: length {len(data)}, the prefix-table formula gives {size}")
        # Writers choose the smallest size in bits (before rounding to bytes), the larger p on
        # ties (informative: readers accept any p).
        best = min(range(29), key=lambda q: (32 * ((1 << q) + 1) + n * (32 - q + v), -q))
        if best != p:
            self.notes.append(f"{name}: {what} uses p = {p}, the writer rule gives {best}")
        d = struct.unpack_from(f"<{slots + 1}I", data, 0)
        if d[0] != 0 or d[slots] != n:
            self.fail(name, off, f"{what}: directory does not start at 0 and end at {n}")
        body = data[4 * (slots + 1) :]
        self.check_padding(name, off + 4 * (slots + 1), body, n * w)
        entries = []
        prev = None
        for j in range(slots):
            if d[j + 1] < d[j]:
                self.fail(name, off + 4 * (j + 1), f"{what}: directory not monotone")
            for i in range(d[j], d[j + 1]):
                suffix = read_bits(body, i * w, 32 - p)
                value = read_bits(body, i * w + 32 - p, v)
                k32 = (j << (32 - p)) | suffix if p else suffix
                if prev is not None and (k32, value) <= prev:
                    self.fail(name, off + 4 * (slots + 1) + (i * w) // 8, f"{what}: entry {i} not strictly sorted")
                prev = (k32, value)
                entries.append((k32, value))
        return entries

    # -- WAL (format/wal.md) ----------------------------------------------------------------

    def parse_record(self, buf, o, seed=b""):
        """(type, sequence, payload, next offset) if a record that parses starts at o, else None.

        Parses: type 1 (batch) with length at most 64 MiB or type 2 (seal) with length 8,
        inside the file, and a matching CRC (version 3: seeded with `db_id ‖ LE64(file_id)`
        from the manifest and the file's name). Whether it is the next record is the caller's
        question.
        """
        if o + 17 > len(buf):
            return None
        crc, length, rtype, seq = struct.unpack_from("<IIBQ", buf, o)
        if not ((rtype == WAL_BATCH and length <= MAX_WAL_PAYLOAD) or (rtype == WAL_SEAL and length == 8)):
            return None
        if o + 17 + length > len(buf) or crc32(seed + buf[o + 4 : o + 17 + length]) != crc:
            return None
        return rtype, seq, buf[o + 17 : o + 17 + length], o + 17 + length

    def valid_record_after(self, buf, start, accept, seed=b""):
        """The first offset at or after `start` where a record parses whose sequence `accept`s."""
        last = len(buf) - 1
        while last >= start and buf[last] == 0:
            last -= 1  # a record never starts in the zeros that end a file (its type is not 0)
        for o in range(start, last + 1):
            if buf[o + 8 : o + 9] in (b"\x01", b"\x02"):
                rec = self.parse_record(buf, o, seed)
                if rec is not None and accept(rec[1]):
                    return o
        return None

    def read_wal_header(self, name, buf):
        """(version, header length, first_seq) of an intact header of a known version, else None."""
        if buf[:8] != b"MHDBWAL\0" or len(buf) < 12:
            return None
        (version,) = struct.unpack_from("<I", buf, 8)
        if version == 1 and len(buf) >= 16 and crc32(buf[:12]) == struct.unpack_from("<I", buf, 12)[0]:
            return 1, 16, None
        if version == 2 and len(buf) >= 24 and crc32(buf[:20]) == struct.unpack_from("<I", buf, 20)[0]:
            return 2, 24, struct.unpack_from("<Q", buf, 12)[0]
        if version == 3 and len(buf) >= 52 and crc32(buf[:48]) == struct.unpack_from("<I", buf, 48)[0]:
            return 3, 52, struct.unpack_from("<Q", buf, 40)[0]
        return None

    def check_wal_header_v3(self, name, buf, db_id, file_id):
        """Version 3's header fields, once its CRC matched (format/wal.md, "Version 3")."""
        (flags,) = struct.unpack_from("<I", buf, 12)
        if flags:
            self.fail(name, 12, f"unsupported flags {flags:#x}")
        self.check_identity(name, 16, buf[16:32], db_id)
        (found,) = struct.unpack_from("<Q", buf, 32)
        if found != file_id:
            self.fail(name, 32, f"file_id {found:016x}, but the file is {name} (a renamed file)")

    def wal_seed(self, db_version, db_id, file_id):
        """What a version-3 record's CRC is seeded with; nothing before version 3."""
        return db_id + struct.pack("<Q", file_id) if db_version == 3 else b""

    def read_wal(self, name, newest, db_version, db_id, file_id):
        """One WAL file: {"records": [(sequence, payload, offset)], "version", "first_seq",
        "last_seq", "sealed", "tail"} (tail: bytes after the last valid record or seal)."""
        buf = self.read(name)
        header = self.read_wal_header(name, buf)
        seed = self.wal_seed(db_version, db_id, file_id)
        if header is None:
            # A header cut off while being created holds no record; else it is damage (or a
            # version this reader does not know).
            found = self.valid_record_after(buf, 52 if db_version == 3 else 16, lambda _: True, seed)
            if found is not None:
                if buf[:8] == b"MHDBWAL\0" and len(buf) >= 12 and struct.unpack_from("<I", buf, 8)[0] not in FORMAT_VERSIONS:
                    self.check_version(name, 8, struct.unpack_from("<I", buf, 8)[0], "WAL")
                self.fail(name, 0, f"damaged header, but a valid record at offset {found} (corruption)")
            if buf and not newest:
                self.fail(name, 0, "incomplete header in a WAL file that is not the newest")
            self.notes.append(f"{name}: incomplete header and no record: an empty log cut off at creation")
            return {"records": [], "version": 0, "first_seq": None, "last_seq": None, "sealed": False, "tail": len(buf), "tail_at": 0}
        version, o, first_seq = header
        self.checksums += 1
        if version != db_version:
            self.fail(name, 8, f"a version-{version} WAL file in a version-{db_version} database")
        if version == 3:
            self.check_wal_header_v3(name, buf, db_id, file_id)
        # Versions 2 and 3 share every rule of numbering and seals.
        v2 = version >= 2
        records = []
        # Version 2: batch records are numbered +1 from first_seq; version 1: only increasing.
        last_seq = first_seq - 1 if v2 else 0
        sealed = False
        while o < len(buf):
            rec = self.parse_record(buf, o, seed)
            if rec is not None:
                rtype, seq, payload, nxt = rec
                if rtype == WAL_BATCH and (seq == last_seq + 1 if v2 else seq > last_seq):
                    self.checksums += 1
                    records.append((seq, payload, o))
                    last_seq = seq
                    o = nxt
                    continue
                if v2 and rtype == WAL_SEAL and seq == last_seq and payload == struct.pack("<Q", len(records)):
                    self.checksums += 1
                    sealed = True
                    o = nxt
                    if any(buf[o:]):
                        self.fail(name, o, "bytes that are not zeros after the WAL's seal")
                    break
                if v2:
                    self.fail(
                        name,
                        o,
                        f"intact record (type {rtype}, sequence {seq}) out of place: the next batch is {last_seq + 1},"
                        f" a seal would carry {last_seq} and {len(records)} batches (corruption, not a torn write)",
                    )
            # Not the next valid record: a torn tail, unless a valid record follows.
            floor = last_seq
            found = self.valid_record_after(buf, o + 1, (lambda q: q >= floor) if v2 else (lambda q: q > floor), seed)
            if found is not None:
                self.fail(name, o, f"bad record followed by a valid one at offset {found}: corrupt in the middle")
            break
        tail = len(buf) - o
        if tail:
            what = "zeros" if not any(buf[o:]) else "a torn record"
            self.notes.append(f"{name}: {tail}-byte torn tail at offset {o} ({what}){' after its seal' if sealed else ''}; ignored")
        return {"records": records, "version": version, "first_seq": first_seq, "last_seq": last_seq, "sealed": sealed, "tail": tail, "tail_at": o}

    def decode_batch(self, name, offset, payload, bands, rb, store_sets=False, wal_version=2, columns=(False, 0, False)):
        if len(payload) < 4:
            self.fail(name, offset, "payload shorter than its count")
        (count,) = struct.unpack_from("<I", payload, 0)
        o = 4
        ops = []
        for i in range(count):
            if o >= len(payload):
                self.fail(name, offset, f"payload ends before operation {i} of {count}")
            tag = payload[o]
            o += 1
            # Version 3 has one insert, tag 4; versions 1 and 2 inserts of tag 1 or 3.
            if (tag == 4) != (wal_version == 3) and tag != 2:
                self.fail(name, offset + 17 + o - 1, f"operation {i}: tag {tag} in a version-{wal_version} WAL (corruption)")
            if tag == 4:
                op, o = self.decode_insert_v3(name, offset, payload, o, i, bands, rb, (store_sets,) + tuple(columns))
                ops.append(op)
                continue
            if tag in (1, 3) and (tag == 3) != store_sets:
                self.fail(name, offset + 17 + o - 1, f"operation {i}: insert tag {tag} in an index whose manifest's store_sets is"
                          f" {int(store_sets)} (inserts are tag {3 if store_sets else 1} there)")
            if tag in (1, 3):
                if o + 12 > len(payload):
                    self.fail(name, offset, f"operation {i}: truncated insert")
                docno, klen = struct.unpack_from("<QI", payload, o)
                o += 12
                if klen > MAX_KEY:
                    self.fail(name, offset, f"operation {i}: key of {klen} bytes")
                end = o + klen + 8 * bands + rb
                if end > len(payload):
                    self.fail(name, offset, f"operation {i}: truncated insert")
                key = payload[o : o + klen]
                o += klen + 8 * bands
                sig = payload[o : o + rb]
                o += rb
                values = None
                if tag == 3:
                    # set_len u32, then the coded set (format/wal.md, format/segment.md SHINGLES).
                    if o + 4 > len(payload):
                        self.fail(name, offset + 17 + o, f"operation {i}: insert ends before its set_len")
                    (set_len,) = struct.unpack_from("<I", payload, o)
                    o += 4
                    if o + set_len > len(payload):
                        self.fail(name, offset + 17 + o - 4, f"operation {i}: set_len {set_len} runs past the payload")
                    values = self.decode_set(name, offset + 17 + o, payload[o : o + set_len], f"record at {offset}, operation {i}")
                    o += set_len
                ops.append(("insert", docno, key, sig, values, None))
            elif tag == 2:
                if o + 8 > len(payload):
                    self.fail(name, offset, f"operation {i}: truncated delete")
                (docno,) = struct.unpack_from("<Q", payload, o)
                o += 8
                ops.append(("delete", docno))
            else:
                self.fail(name, offset, f"operation {i}: unknown operation tag {tag}")
        if o != len(payload):
            self.fail(name, offset, f"{len(payload) - o} bytes after the last of {count} operations")
        return ops

    def decode_insert_v3(self, name, offset, payload, o, i, bands, rb, columns):
        """A tag-4 insert after its tag: (op, next offset). `docno u64, key_len u32, key, nkeys
        u16, nkeys × band_key u64, signature, fields u8, [SET: set_len u32, coded set]
        [EXACT_HASH: 16 bytes] [KEEP: value] [SET_SIZE: u32]`; a KEEP value of the manifest's
        keep type `keep` (1 i64, 2 f64: 8 bytes; 3 string: len u16, then the bytes)."""
        store_sets, exact, keep, set_size = columns
        at = offset + 17  # payload offsets are relative to the record's payload
        if o + 12 > len(payload):
            self.fail(name, at + o, f"operation {i}: truncated insert")
        docno, klen = struct.unpack_from("<QI", payload, o)
        o += 12
        if klen > MAX_KEY or o + klen + 2 > len(payload):
            self.fail(name, at + o - 4, f"operation {i}: key of {klen} bytes")
        key = payload[o : o + klen]
        o += klen
        (nkeys,) = struct.unpack_from("<H", payload, o)
        if nkeys != bands:
            self.fail(name, at + o, f"operation {i}: {nkeys} band keys, the manifest's bands are {bands} (corruption)")
        o += 2 + 8 * nkeys
        if o + rb + 1 > len(payload):
            self.fail(name, at + o, f"operation {i}: truncated insert")
        sig = payload[o : o + rb]
        o += rb
        fields = payload[o]
        if fields & 0xF0:
            self.fail(name, at + o, f"operation {i}: unsupported fields bits {fields & 0xF0:#x}")
        lacking = (0 if exact else 0x02) | (0 if keep else 0x04) | (0 if set_size else 0x08)
        if fields & lacking:
            self.fail(name, at + o, f"operation {i}: fields {fields:#x} name a column the manifest does not have (corruption)")
        if fields & 1 != store_sets:
            self.fail(name, at + o, f"operation {i}: SET field {fields & 1}, but the manifest's STORE_SETS is {int(store_sets)} (corruption)")
        o += 1
        values = None
        if fields & 1:
            if o + 4 > len(payload):
                self.fail(name, at + o, f"operation {i}: insert ends before its set_len")
            (set_len,) = struct.unpack_from("<I", payload, o)
            o += 4
            if o + set_len > len(payload):
                self.fail(name, at + o - 4, f"operation {i}: set_len {set_len} runs past the payload")
            values = self.decode_set(name, at + o, payload[o : o + set_len], f"record at {offset}, operation {i}")
            o += set_len
        if fields & 2:
            if o + 16 > len(payload):
                self.fail(name, at + o, f"operation {i}: insert ends before its exact hash")
            if not any(payload[o : o + 16]):
                self.fail(name, at + o, f"operation {i}: an exact hash of 0 (corruption)")
            o += 16
        value = None
        if fields & 4:
            length = 8
            if keep == 3:
                if o + 2 > len(payload):
                    self.fail(name, at + o, f"operation {i}: insert ends before its keep value's length")
                (length,) = struct.unpack_from("<H", payload, o)
                o += 2
            if o + length > len(payload):
                self.fail(name, at + o, f"operation {i}: insert ends inside its keep value")
            raw = payload[o : o + length]
            if keep == 1:
                value = struct.unpack("<q", raw)[0]
            elif keep == 2:
                value = struct.unpack("<d", raw)[0]
                if math.isnan(value):
                    self.fail(name, at + o, f"operation {i}: a NaN keep value (corruption)")
            else:
                value = raw
            o += length
        if fields & 8:
            if o + 4 > len(payload):
                self.fail(name, at + o, f"operation {i}: insert ends before its set size")
            o += 4
        return ("insert", docno, key, sig, values, value), o

    def check_folded_wal(self, m, wid):
        """A WAL file below wal_start (a flush's leftover): an intact header must be this
        database's and carry the file's number, and no batch record may be numbered
        wal_next_seq or more (else the manifest skips records it never folded)."""
        name = f"wal-{wid:016x}.log"
        buf = self.read(name)
        header = self.read_wal_header(name, buf)
        if header is None:
            return
        version, o, _first = header
        if version == 3:
            self.check_wal_header_v3(name, buf, m["db_id"], wid)
        seed = self.wal_seed(version, m["db_id"], wid)
        while (rec := self.parse_record(buf, o, seed)) is not None:
            rtype, seq, _payload, nxt = rec
            if rtype == WAL_BATCH and seq >= m["wal_next_seq"]:
                self.fail(name, o, f"batch record {seq} below wal_start, but the manifest's wal_next_seq is {m['wal_next_seq']}"
                          " (records the manifest never folded)")
            o = nxt

    # -- the whole database -----------------------------------------------------------------

    def open(self):
        m = self.read_manifest()
        params = m["params"]
        version = m["version"]
        rb = (params["num_perm"] * params["bits"] + 7) // 8
        if version == 1:
            sigs, rb = self.read_siglog(params, m["next_docno"])
        elif os.path.exists(self.path("signatures.log")):
            self.notes.append("signatures.log in a version-2 database: not read (signatures are in the segments)")
        docs = {}  # docno -> (key, packed signature)
        for seg in m["segments"]:
            if version == 1:
                lo = 64 + seg["base"] * rb
                hi = 64 + (seg["base"] + seg["span"]) * rb
                self.check_crc(m["name"], seg["entry_offset"] + 40, sigs[lo:hi], seg["siglog_crc"], f"signature-log records of segment {seg['id']:016x}")
            for docno, key, sig, values, keep in self.read_segment(seg, params, version, m["db_id"]):
                docs[docno] = (key, sig if sig is not None else sigs[64 + docno * rb : 64 + (docno + 1) * rb], values, keep)
        deleted = self.read_deletions(m)
        for d in deleted:
            if d not in docs:
                self.fail(f"del-{m['del'][0]:016x}.del", 48 if version == 3 else 20, f"deleted docno {d} is in no segment")
            del docs[d]

        wal_ids, folded = [], []
        for entry in os.listdir(self.root):
            mt = re.fullmatch(r"wal-([0-9a-f]{16})\.log", entry)
            if mt:
                (wal_ids if int(mt.group(1), 16) >= m["wal_start"] else folded).append(int(mt.group(1), 16))
        wal_ids.sort()
        if version >= 2:
            for wid in sorted(folded):
                self.check_folded_wal(m, wid)
        next_docno = m["next_docno"]
        # Version 2: the first replayed file starts at the manifest's wal_next_seq, each next
        # one right after the last batch record before it; version 1: records continue +1
        # from one file to the next.
        last_seq = m["wal_next_seq"] - 1 if version >= 2 else 0
        wal_ops = 0
        self.wal_files = []
        for i, wid in enumerate(wal_ids):
            name = f"wal-{wid:016x}.log"
            newest = i == len(wal_ids) - 1
            wal = self.read_wal(name, newest, version, m["db_id"], wid)
            records = wal["records"]
            if wal["version"] >= 2:
                if wal["first_seq"] != last_seq + 1:
                    what = "the manifest's wal_next_seq" if i == 0 else "one past the previous file's last batch record"
                    self.fail(name, 12, f"first_seq {wal['first_seq']}, but {what} is {last_seq + 1}: a WAL file (or its end) is missing")
                last_seq = wal["last_seq"]
                if not newest and not wal["sealed"]:
                    self.fail(name, wal["tail_at"], "a WAL file that is not the newest ends without its seal (its end was lost)")
            elif wal["version"] == 1 and records:
                if last_seq and records[0][0] != last_seq + 1:
                    self.fail(name, records[0][2], f"the file starts at sequence {records[0][0]}, the previous one ended at {last_seq}")
                last_seq = records[-1][0]
            if wal["tail"] and not newest:
                self.fail(name, wal["tail_at"], "a tail after the last record (or seal) of a WAL file that is not the newest")
            self.wal_files.append({"name": name, "batches": len(records), "sealed": wal["sealed"]})
            for _seq, payload, offset in records:
                for op in self.decode_batch(name, offset, payload, params["bands"], rb, params.get("store_sets", False), wal["version"],
                                            (params.get("exact_hash", False), KEEP_CODES.get(params.get("keep_type"), 0),
                                             params.get("set_size", False))):
                    wal_ops += 1
                    if op[0] == "insert":
                        _, docno, key, sig, values, keep = op
                        if docno != next_docno:
                            self.fail(name, offset, f"insert of docno {docno}, expected {next_docno} (gap or repeat)")
                        next_docno += 1
                        docs[docno] = (key, sig, values, keep)
                    else:
                        docno = op[1]
                        if docs.pop(docno, None) is None:
                            # A writer resolves every delete to a live document (format/v3-design.md,
                            # "Manifest cross-checks"); version 1 did not say so.
                            if version >= 2:
                                self.fail(name, offset, f"deletes docno {docno}, which is not live (corruption)")
                            self.notes.append(f"{name}: record at {offset} deletes docno {docno}, which is not live")
        live = {}
        for docno in sorted(docs):
            key, sig, values, keep = docs[docno]
            if key in live:
                self.notes.append(f"key {key!r}: docno {live[key][0]} shadowed by the newer {docno}")
            live[key] = (docno, sig, values, keep)
        self.summary = {
            "version": version,
            "identity": m["db_id"].hex() if version == 3 else None,
            "segments": len(m["segments"]),
            "blocks": self.blocks,
            "deleted_in_list": len(deleted),
            "wal_files": len(wal_ids),
            "sealed_wal_files": sum(w["sealed"] for w in self.wal_files),
            "wal_operations": wal_ops,
        }
        return params, live


def mix64(z):
    """The SplitMix64 output function (format/hashing.md §9)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def key_text(key):
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        return "hex:" + key.hex()


def set_digest(values):
    """What expected.json records of a stored set (computable without the shingle hash):
    count, first and last value, their sum mod 2^64 and the CRC-32 of the values as LE u32."""
    return {
        "count": len(values),
        "first": values[0] if values else None,
        "last": values[-1] if values else None,
        "sum": sum(values) & M64,
        "crc32": crc32(struct.pack(f"<{len(values)}I", *values)),
    }


def exact_jaccard(a, b):
    """|A ∩ B| / |A ∪ B| of two stored sets, 0 when either is empty (format/hashing.md §14)."""
    if not a or not b:
        return 0.0
    common = len(set(a) & set(b))
    return common / (len(a) + len(b) - common)


def estimate(sig_a, sig_b, num_perm, bits):
    """The §7 estimate from two packed signatures (format/hashing.md §7)."""
    equal = sum(read_bits(sig_a, i * bits, bits) == read_bits(sig_b, i * bits, bits) for i in range(num_perm))
    p = equal / num_perm
    if bits == 64:
        return p
    c = 2.0 ** -bits
    return min(1.0, max(0.0, (p - c) / (1 - c)))


def as_json(reader, params, live, with_values=False):
    keys = sorted(live, key=lambda k: k)
    entries = []
    for k in keys:
        docno, sig, values, keep = live[k]
        e = {"key": key_text(k), "docno": docno, "signature": sig.hex()}
        if "keep_type" in params:
            # The KEEP column: null for a document without a value.
            e["keep"] = key_text(keep) if isinstance(keep, bytes) else keep
        if params.get("index_kind") == "simhash-pigeonhole":
            # The packed one-bit slots are the fingerprint as a little-endian u64.
            e["fingerprint"] = f"{int.from_bytes(sig, 'little'):016x}"
        if values is not None:
            e["set"] = set_digest(values)
            if with_values:
                e["set_values"] = values
        entries.append(e)
    return {
        "format_version": reader.summary["version"],
        "identity": reader.summary["identity"],
        "params": params,
        "wal": reader.wal_files,
        "live": entries,
    }


def same_keep(a, b):
    """Two keep values as JSON gives them: of one type and equal (floats bit for bit, so that
    -0.0 is not 0.0)."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return type(a) is type(b) and a == b


def rerank_margin(t, k, bits):
    """Three standard deviations of the b-bit estimate at J = t (format/hashing.md section 14)."""
    c = 0.0 if bits >= 64 else 2.0 ** -bits
    p = c + (1 - c) * t
    return 3 * math.sqrt(p * (1 - p) / k) / (1 - c)


def check_sets(live, want, params):
    """Each live key's stored-set digest, and each recorded dedup pair's exact Jaccard
    (recomputed from the two decoded sets) and estimate (from the two signatures)."""
    problems = []
    by_key = {key_text(k): v for k, v in live.items()}
    digests = 0
    for e in want["live"]:
        if "set" not in e or e["key"] not in by_key:
            continue
        values = by_key[e["key"]][2]
        got = set_digest(values) if values is not None else None
        if got != e["set"]:
            problems.append(f"key {e['key']!r}: stored set {got} != expected {e['set']}")
        else:
            digests += 1
    pairs = 0
    for pair in want.get("pairs", []):
        a, b = by_key.get(pair["a"]), by_key.get(pair["b"])
        if a is None or b is None:
            problems.append(f"pair {pair['a']!r} / {pair['b']!r}: not both live")
            continue
        j = exact_jaccard(a[2], b[2])
        est = estimate(a[1], b[1], params["num_perm"], params["bits"])
        # A pair re-ranked reports its exact Jaccard; one estimated at or above the threshold
        # plus the re-rank margin (format/hashing.md section 14) reports its estimate.
        reported = j if pair.get("exact", True) else est
        if not pair.get("exact", True) and abs(pair["jaccard"] - pair["estimate"]) > 1e-12:
            problems.append(f"pair {pair['a']!r} / {pair['b']!r}: not re-ranked, yet its jaccard {pair['jaccard']!r} is not its estimate")
        elif abs(reported - pair["jaccard"]) > 1e-9:
            problems.append(f"pair {pair['a']!r} / {pair['b']!r}: exact Jaccard of the stored sets {j!r} != expected {pair['jaccard']!r}")
        elif abs(est - pair["estimate"]) > 1e-9:
            problems.append(f"pair {pair['a']!r} / {pair['b']!r}: estimate {est!r} != expected {pair['estimate']!r}")
        elif "dedup_threshold" in want and "exact" in pair and pair["exact"] != (
                est < want["dedup_threshold"] + rerank_margin(want["dedup_threshold"], params["num_perm"], params["bits"])):
            problems.append(f"pair {pair['a']!r} / {pair['b']!r}: exact = {pair['exact']}, but its estimate {est!r} is "
                            f"{'below' if pair['exact'] is False else 'at or above'} the threshold plus the re-rank margin")
        elif "dedup_threshold" in want and j < want["dedup_threshold"]:
            problems.append(f"pair {pair['a']!r} / {pair['b']!r}: exact Jaccard {j} is below the dedup threshold {want['dedup_threshold']}")
        else:
            pairs += 1
    for pair in want.get("contained", []):
        a, b = by_key.get(pair["a"]), by_key.get(pair["b"])
        if a is None or b is None:
            problems.append(f"contained pair {pair['a']!r} in {pair['b']!r}: not both live")
            continue
        # A containment index with stored sets reports |A ∩ B| / |A| of the stored values
        # (format/containment.md section 4).
        c = len(set(a[2]) & set(b[2])) / len(a[2]) if a[2] else 0.0
        if abs(c - pair["containment"]) > 1e-9:
            problems.append(f"{pair['a']!r} in {pair['b']!r}: containment of the stored sets {c!r} != expected {pair['containment']!r}")
        elif c < want["params"]["threshold"]:
            problems.append(f"{pair['a']!r} in {pair['b']!r}: containment {c} is below the threshold")
        else:
            pairs += 1
    return problems, digests, pairs


def check(out, expected_path):
    with open(expected_path, encoding="utf-8") as f:
        want = json.load(f)
    problems = []
    got = {e["key"]: e for e in out["live"]}
    exp = {e["key"]: e for e in want["live"]}
    for k in sorted(set(exp) - set(got)):
        problems.append(f"missing live key {k!r}")
    for k in sorted(set(got) - set(exp)):
        problems.append(f"unexpected live key {k!r}")
    sigs = keeps = 0
    for k in sorted(set(got) & set(exp)):
        if got[k]["signature"] != exp[k]["signature"]:
            problems.append(f"key {k!r}: signature {got[k]['signature']} != expected {exp[k]['signature']}")
        else:
            sigs += 1
        if "docno" in exp[k] and got[k]["docno"] != exp[k]["docno"]:
            problems.append(f"key {k!r}: docno {got[k]['docno']} != expected {exp[k]['docno']}")
        if "keep" in exp[k] and not same_keep(got[k].get("keep"), exp[k]["keep"]):
            problems.append(f"key {k!r}: keep value {got[k].get('keep')!r} != expected {exp[k]['keep']!r}")
        elif "keep" in exp[k]:
            keeps += 1
    for k in want.get("deleted", []):
        if k in got:
            problems.append(f"deleted key {k!r} is live")
    for name, value in want.get("params", {}).items():
        if out["params"].get(name) != value:
            problems.append(f"parameter {name}: {out['params'].get(name)!r} != expected {value!r}")
    if "format_version" in want and out["format_version"] != want["format_version"]:
        problems.append(f"format version {out['format_version']} != expected {want['format_version']}")
    if "identity" in want and out["identity"] != want["identity"]:
        problems.append(f"identity {out['identity']} != expected {want['identity']}")
    if "wal" in want and out["wal"] != want["wal"]:
        problems.append(f"WAL files {out['wal']} != expected {want['wal']}")
    return problems, len(set(got) & set(exp)), sigs, want, keeps


def main(argv):
    args = argv[1:]
    expected = None
    with_values = "--sets" in args
    if with_values:
        args.remove("--sets")
    if "--check" in args:
        i = args.index("--check")
        if i + 1 >= len(args):
            print("usage: reference_reader.py DB_DIR [--sets] [--check EXPECTED.json]", file=sys.stderr)
            return 2
        expected = args[i + 1]
        del args[i : i + 2]
    if len(args) != 1:
        print("usage: reference_reader.py DB_DIR [--sets] [--check EXPECTED.json]", file=sys.stderr)
        return 2
    reader = Reader(args[0])
    try:
        params, live = reader.open()
    except FormatError as e:
        print(f"reference reader: {e}", file=sys.stderr)
        return 1
    for note in reader.notes:
        print(f"reference reader: note: {note}", file=sys.stderr)
    for note in reader.noncanonical[:5]:
        print(f"reference reader: note: {note}", file=sys.stderr)
    out = as_json(reader, params, live, with_values)
    if expected is None:
        json.dump(out, sys.stdout, indent=1)
        print()
        return 0
    problems, keys, sigs, want, keeps = check(out, expected)
    digests = pairs = 0
    if params.get("store_sets"):
        set_problems, digests, pairs = check_sets(live, want, params)
        problems += set_problems
    if problems:
        for p in problems:
            print(f"reference reader: {p}", file=sys.stderr)
        print(f"reference reader: {len(problems)} differences from {expected}", file=sys.stderr)
        return 1
    s = reader.summary
    print(
        f"reference reader: format version {s['version']}"
        + (f", identity {s['identity']}" if s["identity"] else "")
        + f": {keys} keys, {sigs} signatures,"
        + (f" {keeps} keep values ({params['keep_type']}, field {params['keep_field']!r})," if "keep_type" in params else "")
        + f" {reader.checksums} checksums agree ({s['segments']} segments"
        + (f" with {s['blocks']} checked blocks" if s["version"] >= 2 else "")
        + f", {s['deleted_in_list']} in the deletion list,"
        + (f" {reader.sets_decoded} stored sets decoded, {digests} set digests and {pairs} pairs' exact Jaccard or containment agree,"
           if params.get("store_sets") else "")
        + f" {s['wal_operations']} operations replayed from {s['wal_files']} WAL files"
        + (f", {s['sealed_wal_files']} sealed" if s["version"] >= 2 else "")
        + ")"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
