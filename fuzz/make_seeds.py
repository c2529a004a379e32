#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/seeds/<target>/) from the golden
format-v1 database tests/golden/db-v1. The seeds are committed; this script says where they
came from and rewrites them identically. The targets' input layouts are in fuzz/src/lib.rs."""

import os
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
    }
    for target, files in seeds.items():
        d = os.path.join(HERE, "seeds", target)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
