#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/seeds/<target>/) from the golden
format-v1 database tests/golden/db-v1. The seeds are committed; this script says where they
came from and rewrites them identically. The targets' input layouts are in fuzz/src/lib.rs."""

import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "tests", "golden", "db-v1")


def read(name):
    with open(os.path.join(GOLDEN, name), "rb") as f:
        return f.read()


def wal_records(data):
    pos, out = 16, []
    while pos + 17 <= len(data):
        (length,) = struct.unpack_from("<I", data, pos + 4)
        out.append(data[pos : pos + 17 + length])
        pos += 17 + length
    return out


def main():
    wal = read("wal-0000000000000009.log")
    records = wal_records(wal)
    seeds = {
        # The first byte's low bit set: the target makes the checksums match the rest.
        "current": {"golden-fixed": b"\x01" + read("CURRENT"), "golden-raw": b"\x00" + read("CURRENT")},
        "manifest": {"golden-fixed": b"\x01" + read("MANIFEST-0000000000000005"), "golden-raw": b"\x00" + read("MANIFEST-0000000000000005")},
        "deletions": {"golden-fixed": b"\x01" + read("del-000000000000000b.del"), "golden-raw": b"\x00" + read("del-000000000000000b.del")},
        "siglog_header": {"golden": read("signatures.log")[:64]},
        "wal_replay": {
            "golden": wal,
            "golden-zeros-ahead": wal + bytes(4096),
            "golden-torn-last": wal[: len(wal) - len(records[-1]) // 2],
            "header-only": wal[:16],
            "two-records": wal[:16] + records[0] + records[1],
        },
        "wal_batch": {f"record-{i}": r[17:] for i, r in enumerate(records)},
        "segment": {"golden-8": read("seg-0000000000000008.seg"), "golden-a": read("seg-000000000000000a.seg")},
        # Programs (fuzz/src/lib.rs, `model`): op byte % 8 is 0-2 a write batch of
        # 1 + (op >> 3) % 4 changes (a key byte: key (byte & 0x7f) % 24, deleted if bit 7 is set,
        # else set to the version in the next byte), 3 flush,
        # 4 compact, 5 crash (bit 3 set: torn unsynced writes, seeded by the next byte),
        # 6 reopen, 7 reads.
        "model": {
            "write-flush-crash-reopen": bytes([
                0x18, 1, 10, 2, 20, 3, 30, 4, 40,  # 4 inserts
                3,  # flush
                0x08, 0x81, 5, 7,  # delete k1, insert k5
                5,  # crash, durable state only
                0x10, 2, 21, 0x82, 6, 9,  # upsert k2, delete k2, insert k6
                0x0D, 77,  # crash, torn unsynced writes (seed 77)
                4,  # compact
                6,  # reopen
                0, 3, 31, 7,
            ]),
            **{f"random-{i}": bytes(random.Random(i).randrange(256) for _ in range(120)) for i in range(4)},
        },
    }
    for target, files in seeds.items():
        d = os.path.join(HERE, "seeds", target)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
