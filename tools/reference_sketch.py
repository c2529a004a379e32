#!/usr/bin/env python3
"""An independent implementation of format/hashing.md (hash spec v1), written from the spec.

It prints the golden vectors that tests/golden_vectors.rs checks mhdb against (stored in
tests/golden/vectors.json). Requires the `xxhash` package (XXH3-64 with a seed):

    python3 -m venv /tmp/v && /tmp/v/bin/pip install xxhash
    /tmp/v/bin/python tools/reference_sketch.py > tests/golden/vectors.json

If this script and mhdb ever disagree, one of them no longer follows the spec.
"""

import json
import sys
import unicodedata

import xxhash

M64 = (1 << 64) - 1
M32 = (1 << 32) - 1
EMPTY = M64
SPEC = 1
WHITE_SPACE = set("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | {
    chr(c) for c in range(0x2000, 0x200B)
}


def xxh3(data, seed):
    return xxhash.xxh3_64_intdigest(data, seed=seed)


def derive(scheme, seed, purpose):
    return xxh3(f"mhdb-spec-{SPEC}/{scheme}/{purpose}".encode("ascii"), seed)


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def splitmix(seed):
    state = seed
    while True:
        state = (state + 0x9E3779B97F4A7C15) & M64
        yield mix64(state)


def normalize(text, nfkc=False, lowercase=True, collapse=True):
    if nfkc:
        text = unicodedata.normalize("NFKC", text)
    if lowercase:
        text = text.lower()
    if not collapse:
        return text
    words, cur = [], []
    for ch in text:
        if ch in WHITE_SPACE:
            if cur:
                words.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
    if cur:
        words.append("".join(cur))
    return " ".join(words)


def shingle_hashes(text, kind, n, seed, nfkc=False):
    t = normalize(text, nfkc)
    if not t:
        return []
    if kind == "char":
        chars = list(t)
        if len(chars) <= n:
            return [xxh3(t.encode(), seed)]
        return [xxh3("".join(chars[i:i + n]).encode(), seed) for i in range(len(chars) - n + 1)]
    words = [w for w in t.split(" ") if w]
    if len(words) < n:
        return [xxh3(t.encode(), seed)]
    return [xxh3(" ".join(words[i:i + n]).encode(), seed) for i in range(len(words) - n + 1)]


def kperm(hashes, k, seed):
    gen = splitmix(derive("kperm", seed, "perm"))
    perms = []
    for _ in range(k):
        r = next(gen)
        perms.append(((r & M32) | 1, r >> 32))
    if not hashes:
        return [EMPTY] * k
    xs = [h & M32 for h in hashes]
    return [min(((a * x + b) & M32) for x in xs) for a, b in perms]


def oph(hashes, k, seed):
    bins = [EMPTY] * k
    for h in hashes:
        i = ((h >> 32) * k) >> 32
        bins[i] = min(bins[i], h)
    if all(b == EMPTY for b in bins):
        return bins
    s = derive("oph", seed, "densify")
    out = []
    for i, v in enumerate(bins):
        if v != EMPTY:
            out.append(v)
            continue
        t = 1
        while True:
            j = ((mix64(s ^ ((i << 32) & M64) ^ t) >> 32) * k) >> 32
            if bins[j] != EMPTY:
                out.append(bins[j])
                break
            t += 1
    return out


def signature(text, scheme, k, seed, kind, n, nfkc=False):
    hashes = shingle_hashes(text, kind, n, derive(scheme, seed, "shingle"), nfkc)
    return kperm(hashes, k, seed) if scheme == "kperm" else oph(hashes, k, seed)


def pack(slots, bits):
    total = len(slots) * bits
    acc = 0
    mask = (1 << bits) - 1
    for i, s in enumerate(slots):
        acc |= (s & mask) << (i * bits)
    return acc.to_bytes((total + 7) // 8, "little")


def band_keys(slots, scheme, seed, bands, rows):
    base = derive(scheme, seed, "band")
    keys = []
    for j in range(bands):
        data = b"".join(s.to_bytes(8, "little") for s in slots[j * rows:(j + 1) * rows])
        keys.append(xxh3(data, mix64((base + j) & M64)))
    return keys


TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "  Mixed CASE\tand\n\nwhitespace   runs  ",
    "Straße in München",
    "ΟΔΟΣ ΟΔΟΣ",
    "日本語のテキストです",
    "emoji 🦀🦀 rust",
    "ＡＢＣ ﬁne",
    "",
    "a",
    " \t\n ",
]

CONFIGS = [
    ("oph", "char", 5, False, 7),
    ("kperm", "char", 5, False, 7),
    ("oph", "word", 3, False, 0),
    ("kperm", "word", 3, False, 0),
    ("oph", "char", 3, True, 12345),
]


def main():
    cases = []
    for scheme, kind, n, nfkc, seed in CONFIGS:
        for text in TEXTS:
            s16 = signature(text, scheme, 16, seed, kind, n, nfkc)
            s128 = signature(text, scheme, 128, seed, kind, n, nfkc)
            digest = xxh3(b"".join(v.to_bytes(8, "little") for v in s128), 0)
            cases.append({
                "scheme": scheme, "shingle": f"{kind}:{n}", "nfkc": nfkc, "seed": seed, "text": text,
                "slots16": [f"{v:016x}" for v in s16],
                "digest128": f"{digest:016x}",
                "packed16": {str(b): pack(s16, b).hex() for b in (1, 2, 4, 8, 16, 32, 64)},
                "bands4x4": [f"{v:016x}" for v in band_keys(s16, scheme, seed, 4, 4)],
            })
    json.dump({"spec_version": SPEC, "cases": cases}, sys.stdout, indent=1, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
