#!/usr/bin/env python3
"""An independent implementation of format/hashing.md (hash spec v1), written from the spec.

It prints the golden vectors that tests/golden_vectors.rs checks mhdb against (stored in
tests/golden/vectors.json); with the argument `keyed-simhash`, those of keyed hashing (§12) and
SimHash (§13) that tests/golden_keyed_simhash.rs checks (tests/golden/keyed_simhash.json); with `keyed-sets`, the stored set values of §14 under the
test key that tests/golden_keyed_sets.rs checks (tests/golden/keyed_sets.json); with
`tokens`, those of token lists (§15) that tests/golden_tokens.rs and the Python package's
tests check (tests/golden/tokens.json); with `unicode-words`, those of Unicode word shingles
(§16) that tests/golden_unicode_words.rs and python/tests/test_unicode_words.py check
(tests/golden/unicode_words.json); with `unicode-tables`, src/sketch/unicode_tables.rs; with
`exact`, the exact hashes of §17 that tests/golden_exact_hash.rs checks
(tests/golden/exact_hash.json); with `containment`, a containment index's size classes and
class-seeded band keys (format/containment.md §1-§2) that tests/golden_containment.rs checks
(tests/golden/containment.json).
Requires the `xxhash` package (XXH3-64 with a seed); SipHash-1-3 and SHA-256 are written here
or come from the standard library:

    python3 -m venv /tmp/v && /tmp/v/bin/pip install xxhash
    /tmp/v/bin/python tools/conformance/reference_sketch.py > tests/golden/vectors.json
    /tmp/v/bin/python tools/conformance/reference_sketch.py keyed-simhash > tests/golden/keyed_simhash.json
    /tmp/v/bin/python tools/conformance/reference_sketch.py keyed-sets > tests/golden/keyed_sets.json
    /tmp/v/bin/python tools/conformance/reference_sketch.py tokens > tests/golden/tokens.json
    /tmp/v/bin/python tools/conformance/reference_sketch.py exact > tests/golden/exact_hash.json
    /tmp/v/bin/python tools/conformance/reference_sketch.py containment > tests/golden/containment.json

§16 needs UAX #29 and the Unicode tables at the spec's Unicode version, 16.0.0 (imported only
by those two arguments):

    /tmp/v/bin/pip install uniseg==0.10.1 unicodedata2==16.0.0
    /tmp/v/bin/python tools/conformance/reference_sketch.py unicode-words > tests/golden/unicode_words.json
    /tmp/v/bin/python tools/conformance/reference_sketch.py unicode-tables > src/sketch/unicode_tables.rs

If this script and mhdb ever disagree, one of them no longer follows the spec.
"""

import hashlib
import json
import math
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


def shingles(text, kind, n, nfkc=False, folds=()):
    """The shingles of §3 (and of §16's `unicode-word`) as byte strings, in text order."""
    t = normalize(text, nfkc)
    if not t:
        return []
    if kind == "unicode-word":
        return unicode_word_shingles(unicode_word_tokens(t, folds), n)
    if kind == "char":
        chars = list(t)
        if len(chars) <= n:
            return [t.encode()]
        return ["".join(chars[i:i + n]).encode() for i in range(len(chars) - n + 1)]
    words = [w for w in t.split(" ") if w]
    if len(words) < n:
        return [t.encode()]
    return [" ".join(words[i:i + n]).encode() for i in range(len(words) - n + 1)]


def shingle_hashes(text, kind, n, seed, nfkc=False, folds=()):
    return [xxh3(s, seed) for s in shingles(text, kind, n, nfkc, folds)]


# --- §12 keyed hashing -----------------------------------------------------------------------

def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def siphash13(k0, k1, data, out128=False):
    """SipHash-1-3 (Aumasson and Bernstein): 1 compression round, 3 finalization rounds; with
    `out128`, the paper's 128-bit output (v1 starts xored with 0xEE, the finalization xors 0xEE
    into v2, and a second word follows 0xDD xored into v1 and three more rounds), returned as
    the integer whose 16 LE bytes are the first output word then the second."""
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D ^ (0xEE if out128 else 0),
         k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def sipround():
        v[0] = (v[0] + v[1]) & M64
        v[1] = rotl(v[1], 13)
        v[1] ^= v[0]
        v[0] = rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & M64
        v[3] = rotl(v[3], 16)
        v[3] ^= v[2]
        v[0] = (v[0] + v[3]) & M64
        v[3] = rotl(v[3], 21)
        v[3] ^= v[0]
        v[2] = (v[2] + v[1]) & M64
        v[1] = rotl(v[1], 17)
        v[1] ^= v[2]
        v[2] = rotl(v[2], 32)

    full = len(data) - len(data) % 8
    blocks = [int.from_bytes(data[i:i + 8], "little") for i in range(0, full, 8)]
    blocks.append(int.from_bytes(data[full:], "little") | ((len(data) & 0xFF) << 56))
    for m in blocks:
        v[3] ^= m
        sipround()
        v[0] ^= m
    v[2] ^= 0xEE if out128 else 0xFF
    for _ in range(3):
        sipround()
    first = v[0] ^ v[1] ^ v[2] ^ v[3]
    if not out128:
        return first
    v[1] ^= 0xDD
    for _ in range(3):
        sipround()
    return first | ((v[0] ^ v[1] ^ v[2] ^ v[3]) << 64)


def fingerprint(key):
    return hashlib.sha256(b"mhdb-key-fingerprint-1\x00" + key).digest()


def keyed_subkey(key, name, seed, purpose="shingle"):
    d = hashlib.sha256(f"mhdb-spec-{SPEC}/{name}/{purpose}".encode("ascii") + b"\x00"
                       + seed.to_bytes(8, "little") + key).digest()
    return int.from_bytes(d[0:8], "little"), int.from_bytes(d[8:16], "little")


def keyed_shingle_hashes(text, kind, n, subkey, nfkc=False):
    return [siphash13(subkey[0], subkey[1], s) for s in shingles(text, kind, n, nfkc)]


# --- §13 SimHash ------------------------------------------------------------------------------

def simhash(hashes, weighting="tf"):
    """§13.2 over the shingle-hash occurrences `hashes`, weighted by tf or 1 + floor(log2 tf)."""
    tf = {}
    for h in hashes:
        tf[h] = tf.get(h, 0) + 1
    weight = {h: (c if weighting == "tf" else c.bit_length()) for h, c in tf.items()}
    fp = 0
    for i in range(64):
        v = sum(w if (h >> i) & 1 else -w for h, w in weight.items())
        if v > 0:
            fp |= 1 << i
    return fp


def simhash_blocks(h):
    m = h + 1
    q, r = divmod(64, m)
    out, start = [], 0
    for j in range(m):
        length = q + (1 if j < r else 0)
        out.append((start, length))
        start += length
    return out


def simhash_block_keys(fp, seed, h):
    base = derive("simhash", seed, "band")
    keys = []
    for j, (start, length) in enumerate(simhash_blocks(h)):
        value = (fp >> start) & ((1 << length) - 1)
        keys.append(xxh3(value.to_bytes(8, "little"), mix64((base + j) & M64)))
    return keys


def simhash_text(text, kind, n, seed, nfkc=False, key=None, weighting="tf"):
    if key is None:
        hashes = shingle_hashes(text, kind, n, derive("simhash", seed, "shingle"), nfkc)
    else:
        hashes = keyed_shingle_hashes(text, kind, n, keyed_subkey(key, "simhash", seed), nfkc)
    return simhash(hashes, weighting)


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


def signature(text, scheme, k, seed, kind, n, nfkc=False, key=None, folds=()):
    if key is None:
        hashes = shingle_hashes(text, kind, n, derive(scheme, seed, "shingle"), nfkc, folds)
    else:
        hashes = keyed_shingle_hashes(text, kind, n, keyed_subkey(key, scheme, seed), nfkc)
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


# The published test key of §12: bytes 0x00, 0x01, ..., 0x1f.
TEST_KEY = bytes(range(32))

KEYED_CONFIGS = [
    ("oph", "char", 5, False, 7),
    ("kperm", "char", 5, False, 7),
    ("oph", "word", 3, False, 0),
]

# Texts where term frequencies differ a lot, so that tf and log-tf weights disagree.
REPETITIVE = [
    "+-----+-----+-----+-----+-----+ | a | b | +-----+-----+-----+-----+-----+",
    "the cat and the dog and the bird and the fish saw the cat, the end",
]

SIMHASH_CONFIGS = [
    ("char", 5, False, 0),
    ("word", 1, False, 0),
    ("char", 3, True, 12345),
]


def keyed_simhash_main():
    key = TEST_KEY
    k0, k1 = int.from_bytes(key[0:8], "little"), int.from_bytes(key[8:16], "little")
    out = {
        "spec_version": SPEC,
        "test_key": key.hex(),
        "fingerprint": fingerprint(key).hex(),
        # SipHash-1-3 under the first 16 bytes of the test key, of the messages 00, 00 01, ...
        "siphash13": [f"{siphash13(k0, k1, bytes(range(n))):016x}" for n in range(16)],
        "subkeys": {
            f"{name}/{seed}": [f"{w:016x}" for w in keyed_subkey(key, name, seed)]
            for name, seed in [("oph", 7), ("kperm", 7), ("oph", 0), ("simhash", 0), ("simhash", 12345)]
        },
        "keyed_minhash": [],
        "simhash": [],
    }
    for scheme, kind, n, nfkc, seed in KEYED_CONFIGS:
        for text in TEXTS:
            s16 = signature(text, scheme, 16, seed, kind, n, nfkc, key)
            out["keyed_minhash"].append({
                "scheme": scheme, "shingle": f"{kind}:{n}", "nfkc": nfkc, "seed": seed, "text": text,
                "slots16": [f"{v:016x}" for v in s16],
                "bands4x4": [f"{v:016x}" for v in band_keys(s16, scheme, seed, 4, 4)],
            })
    for kind, n, nfkc, seed in SIMHASH_CONFIGS:
        for keyed, weighting in [(False, "tf"), (True, "tf"), (False, "logtf")]:
            for text in TEXTS + REPETITIVE:
                fp = simhash_text(text, kind, n, seed, nfkc, key if keyed else None, weighting)
                out["simhash"].append({
                    "shingle": f"{kind}:{n}", "nfkc": nfkc, "seed": seed, "keyed": keyed,
                    "weighting": weighting, "text": text,
                    "fingerprint": f"{fp:016x}",
                    "blocks_h3": [f"{v:016x}" for v in simhash_block_keys(fp, seed, 3)],
                    "blocks_h4": [f"{v:016x}" for v in simhash_block_keys(fp, seed, 4)],
                })
    # Hamming distance and cosine estimate of two fingerprints of the first config.
    a = simhash_text(TEXTS[0], "char", 5, 0)
    b = simhash_text(TEXTS[0].replace("lazy", "sleepy"), "char", 5, 0)
    d = bin(a ^ b).count("1")
    out["distance"] = {"a": f"{a:016x}", "b": f"{b:016x}", "hamming": d,
                       "cosine_estimate": math.cos(math.pi * d / 64)}
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    print()


# --- §14 stored shingle sets ----------------------------------------------------------------

def stored_set(text, scheme, seed, kind, n, nfkc=False, key=None, derivation="keyed"):
    """The sorted distinct stored values of §14: unkeyed (no key), keyed under the set key, or
    version 2's keyed derivation (the top halves of the keyed shingle hashes)."""
    if key is None:
        hashes = shingle_hashes(text, kind, n, derive(scheme, seed, "shingle"), nfkc)
    elif derivation == "keyed-v2":
        hashes = keyed_shingle_hashes(text, kind, n, keyed_subkey(key, scheme, seed), nfkc)
    else:
        hashes = keyed_shingle_hashes(text, kind, n, keyed_subkey(key, scheme, seed, "set"), nfkc)
    return sorted({h >> 32 for h in hashes})


def keyed_sets_main():
    key = TEST_KEY
    out = {
        "spec_version": SPEC,
        "test_key": key.hex(),
        "set_subkeys": {
            f"{name}/{seed}": [f"{w:016x}" for w in keyed_subkey(key, name, seed, "set")]
            for name, seed in [("oph", 7), ("kperm", 7), ("oph", 0), ("kperm", 0), ("oph", 12345)]
        },
        "sets": [],
    }
    for scheme, kind, n, nfkc, seed in KEYED_CONFIGS:
        for text in TEXTS:
            out["sets"].append({
                "scheme": scheme, "shingle": f"{kind}:{n}", "nfkc": nfkc, "seed": seed, "text": text,
                "unkeyed": [f"{v:08x}" for v in stored_set(text, scheme, seed, kind, n, nfkc)],
                "keyed": [f"{v:08x}" for v in stored_set(text, scheme, seed, kind, n, nfkc, key)],
                "keyed_v2": [f"{v:08x}" for v in
                             stored_set(text, scheme, seed, kind, n, nfkc, key, "keyed-v2")],
            })
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    print()


# --- §15 token lists -------------------------------------------------------------------------

def token_input(token):
    """A token's hashing input: a string's UTF-8 bytes; 0xFF and LE64 of an integer."""
    if isinstance(token, str):
        return token.encode("utf-8")
    return b"\xff" + (token & M64).to_bytes(8, "little")


def token_shingles(tokens, width):
    """The shingles of §15 as byte strings, in order."""
    inputs = [token_input(t) for t in tokens]
    if width == 1:
        return inputs
    if not inputs:
        return []
    n = min(width, len(inputs))
    return [
        b"".join(len(x).to_bytes(4, "little") + x for x in inputs[i:i + n])
        for i in range(len(inputs) - n + 1)
    ]


def token_signature(tokens, width, scheme, k, seed, key=None):
    if key is None:
        s = derive(scheme, seed, "shingle")
        hashes = [xxh3(x, s) for x in token_shingles(tokens, width)]
    else:
        k0, k1 = keyed_subkey(key, scheme, seed)
        hashes = [siphash13(k0, k1, x) for x in token_shingles(tokens, width)]
    return hashes, (kperm(hashes, k, seed) if scheme == "kperm" else oph(hashes, k, seed))


TOKEN_LISTS = [
    ["the", "quick", "brown", "fox", "jumps"],
    ["fox", "the", "jumps", "quick", "brown", "the"],
    [1, 2, 3, 4, 5],
    ["1", 1],
    [-1, 0, 9223372036854775807, -9223372036854775808],
    ["日本", "語", "🦀", "", "Straße"],
    ["ab", "c"],
    ["a", "bc"],
    ["a"],
    [],
]

# (scheme, seed, keyed)
TOKEN_CONFIGS = [("oph", 7, False), ("kperm", 7, False), ("oph", 0, True)]

# Precomputed element hashes (§15), sketched as they are.
GIVEN_HASHES = [0x0123456789ABCDEF, 0xFEDCBA9876543210, 0x8000000000000001, 0x00000000FFFFFFFF]


def tokens_main():
    out = {
        "spec_version": SPEC,
        "test_key": TEST_KEY.hex(),
        "inputs": [
            {"token": t, "input": token_input(t).hex()}
            for t in ["1", 1, -1, "", "é", 9223372036854775807, -9223372036854775808]
        ],
        "ngrams": [
            {"tokens": tokens, "width": w, "shingles": [x.hex() for x in token_shingles(tokens, w)]}
            for tokens, w in [(["ab", "c"], 2), ([7, "x", "y"], 2), (["a", "b"], 3)]
        ],
        "cases": [],
        "given_hashes": {
            "hashes": [f"{h:016x}" for h in GIVEN_HASHES],
            "oph_seed7_slots16": [f"{v:016x}" for v in oph(GIVEN_HASHES, 16, 7)],
            "kperm_seed7_slots16": [f"{v:016x}" for v in kperm(GIVEN_HASHES, 16, 7)],
        },
    }
    for scheme, seed, keyed in TOKEN_CONFIGS:
        for width in (1, 2, 3):
            for tokens in TOKEN_LISTS:
                key = TEST_KEY if keyed else None
                hashes, s16 = token_signature(tokens, width, scheme, 16, seed, key)
                _, s128 = token_signature(tokens, width, scheme, 128, seed, key)
                digest = xxh3(b"".join(v.to_bytes(8, "little") for v in s128), 0)
                out["cases"].append({
                    "scheme": scheme, "seed": seed, "keyed": keyed, "width": width,
                    "tokens": tokens,
                    "hashes": [f"{h:016x}" for h in hashes],
                    "slots16": [f"{v:016x}" for v in s16],
                    "digest128": f"{digest:016x}",
                })
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    print()


# --- §17 exact hash --------------------------------------------------------------------------

def exact_hash(data, scheme, seed, key=None):
    """§17: XXH3-128 under derive(scheme, seed, "exact"), or keyed SipHash-1-3-128 under the
    subkey of label `exact`; 0 becomes 1."""
    if key is None:
        h = xxhash.xxh3_128_intdigest(data, seed=derive(scheme, seed, "exact"))
    else:
        k0, k1 = keyed_subkey(key, scheme, seed, "exact")
        h = siphash13(k0, k1, data, out128=True)
    return h or 1


def exact_token_bytes(tokens):
    """The bytes a token list's exact hash covers: each input after its LE u32 length."""
    return b"".join(len(x).to_bytes(4, "little") + x for x in map(token_input, tokens))


# (scheme, seed, nfkc)
EXACT_CONFIGS = [("oph", 7, False), ("kperm", 0, True), ("oph", 12345, False)]


def exact_main():
    key = TEST_KEY
    k0, k1 = 0x0706050403020100, 0x0F0E0D0C0B0A0908
    out = {
        "spec_version": SPEC,
        "test_key": key.hex(),
        "siphash13_128": [f"{siphash13(k0, k1, bytes(range(n)), True):032x}" for n in range(16)],
        "exact_subkeys": {
            f"{name}/{seed}": [f"{w:016x}" for w in keyed_subkey(key, name, seed, "exact")]
            for name, seed in [("oph", 7), ("kperm", 7), ("oph", 0)]
        },
        "texts": [],
        "token_lists": [],
    }
    for scheme, seed, nfkc in EXACT_CONFIGS:
        for text in TEXTS + ["the quick  brown FOX", "THE QUICK BROWN FOX "]:
            data = normalize(text, nfkc).encode()
            out["texts"].append({
                "scheme": scheme, "seed": seed, "nfkc": nfkc, "text": text,
                "normalized": data.hex(),
                "unkeyed": f"{exact_hash(data, scheme, seed):032x}",
                "keyed": f"{exact_hash(data, scheme, seed, key):032x}",
            })
        for tokens in TOKEN_LISTS:
            data = exact_token_bytes(tokens)
            out["token_lists"].append({
                "scheme": scheme, "seed": seed, "tokens": tokens, "bytes": data.hex(),
                "unkeyed": f"{exact_hash(data, scheme, seed):032x}",
                "keyed": f"{exact_hash(data, scheme, seed, key):032x}",
            })
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    print()


# --- §16 Unicode word shingles ---------------------------------------------------------------
# UAX #29 word boundaries by uniseg, and the Alphabetic property by uniseg too; General_Category
# by unicodedata2; all three at the Unicode version of the spec (pinned in .ci/run:
# uniseg==0.10.1, unicodedata2==16.0.0).

UNICODE_WORDS_VERSION = "16.0.0"
FOLDS = ("fold-punctuation", "fold-digits")


def unicode_libraries():
    """uniseg's word segmentation and Alphabetic, unicodedata2's General_Category."""
    import unicodedata2
    import uniseg
    from uniseg.derived import alphabetic
    from uniseg.wordbreak import words

    for name, version in [("uniseg", uniseg.unidata_version),
                          ("unicodedata2", unicodedata2.unidata_version)]:
        if version != UNICODE_WORDS_VERSION:
            sys.exit(f"{name} implements Unicode {version}, the spec {UNICODE_WORDS_VERSION}")
    return words, alphabetic, unicodedata2.category


def unicode_word_tokens(normalized, folds=()):
    """§16's tokens: UAX #29 word segments holding a character that is Alphabetic or of
    General_Category N*, then folded."""
    words, alphabetic, category = unicode_libraries()
    out = []
    for seg in words(normalized):
        if not any(alphabetic(c) or category(c).startswith("N") for c in seg):
            continue
        if "fold-punctuation" in folds:
            seg = "".join(c for c in seg if not category(c).startswith("P"))
        if "fold-digits" in folds:
            seg = "".join("0" if category(c) == "Nd" else c for c in seg)
        out.append(seg)
    return out


def unicode_word_shingles(tokens, n):
    """Windows of n tokens joined by single spaces; all tokens once if fewer; none if none."""
    if not tokens:
        return []
    if len(tokens) < n:
        return [" ".join(tokens).encode()]
    return [" ".join(tokens[i:i + n]).encode() for i in range(len(tokens) - n + 1)]


def parse_shingle(spec):
    """`kind:n+option+...` → (kind, n, folds)."""
    base, *options = spec.split("+")
    kind, n = base.split(":")
    assert all(o in FOLDS for o in options), spec
    return kind, int(n), tuple(options)


UNICODE_WORD_TEXTS = [
    "The quick brown fox can't stop: 3.14, 1,000 and U.S.A.!",
    "日本語のテキストです。カタカナとひらがな、漢字。",
    "中文文本的重复检测，使用最小哈希。",
    "繁體中文：這是一個測試。",
    "한국어 텍스트 중복 검출",
    "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ",
    "ພາສາລາວ ບໍ່ມີ",
    "ភាសាខ្មែរ",
    "မြန်မာဘာသာ",
    "اللغة العربية ١٢٣ و٤٥",
    "emoji 🦀🦀 rust 👨\u200d👩\u200d👧 ok 🇯🇵",
    "Cafe\u0301 noe\u0308l n\u0303",
    "२०२४ year 2024 ２０２４ ٢٠٢٤",
    "e-mail user_name x.y.z don’t «quoted» (paren) ¿qué?",
    "¡!?.,;:…—",
    "",
    "a",
]

UNICODE_WORD_CONFIGS = [
    # (scheme, shingle, nfkc, seed)
    ("oph", "unicode-word:1", False, 0),
    ("oph", "unicode-word:2", False, 7),
    ("kperm", "unicode-word:3", False, 0),
    ("oph", "unicode-word:1+fold-punctuation", False, 0),
    ("oph", "unicode-word:2+fold-digits", True, 0),
    ("oph", "unicode-word:2+fold-punctuation+fold-digits", False, 12345),
]


def unicode_words_main():
    cases = []
    for scheme, spec, nfkc, seed in UNICODE_WORD_CONFIGS:
        kind, n, folds = parse_shingle(spec)
        for text in UNICODE_WORD_TEXTS:
            t = normalize(text, nfkc)
            sh = shingles(text, kind, n, nfkc, folds)
            s16 = signature(text, scheme, 16, seed, kind, n, nfkc, folds=folds)
            s128 = signature(text, scheme, 128, seed, kind, n, nfkc, folds=folds)
            digest = xxh3(b"".join(v.to_bytes(8, "little") for v in s128), 0)
            cases.append({
                "scheme": scheme, "shingle": spec, "nfkc": nfkc, "seed": seed, "text": text,
                "tokens": unicode_word_tokens(t, folds) if t else [],
                "shingles": [x.decode() for x in sh],
                "hashes": [f"{xxh3(x, derive(scheme, seed, 'shingle')):016x}" for x in sh],
                "slots16": [f"{v:016x}" for v in s16],
                "digest128": f"{digest:016x}",
            })
    out = {"spec_version": SPEC, "unicode_version": UNICODE_WORDS_VERSION, "cases": cases}
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    print()


def unicode_tables_main():
    """Prints src/sketch/unicode_tables.rs: the General_Category P* and Nd ranges that §16's
    folds use, from unicodedata2 at the spec's Unicode version."""
    _, _, category = unicode_libraries()

    def ranges(pred):
        out = []
        for c in range(0x110000):
            if pred(category(chr(c))):
                if out and out[-1][1] == c - 1:
                    out[-1][1] = c
                else:
                    out.append([c, c])
        return "\n".join(f"    (0x{a:04X}, 0x{b:04X})," for a, b in out)

    print(UNICODE_TABLES_RS.format(
        version=UNICODE_WORDS_VERSION,
        punctuation=ranges(lambda gc: gc.startswith("P")),
        digits=ranges(lambda gc: gc == "Nd"),
    ), end="")


UNICODE_TABLES_RS = """\
//! The General_Category tables of Unicode word folding (`format/hashing.md` §16), at Unicode
//! {version}: punctuation (P*) and decimal digits (Nd), as inclusive code point ranges.
//! Generated by `tools/conformance/reference_sketch.py unicode-tables` (from unicodedata2); do
//! not edit by hand.

/// Whether `c` is of General_Category P* (Pc, Pd, Ps, Pe, Pi, Pf, Po).
pub fn is_punctuation(c: char) -> bool {{
    in_ranges(c, PUNCTUATION)
}}

/// Whether `c` is of General_Category Nd.
pub fn is_decimal_digit(c: char) -> bool {{
    in_ranges(c, DECIMAL_DIGITS)
}}

fn in_ranges(c: char, ranges: &[(u32, u32)]) -> bool {{
    let c = u32::from(c);
    ranges
        .binary_search_by(|&(lo, hi)| {{
            if hi < c {{
                std::cmp::Ordering::Less
            }} else if lo > c {{
                std::cmp::Ordering::Greater
            }} else {{
                std::cmp::Ordering::Equal
            }}
        }})
        .is_ok()
}}

#[rustfmt::skip]
const PUNCTUATION: &[(u32, u32)] = &[
{punctuation}
];

#[rustfmt::skip]
const DECIMAL_DIGITS: &[(u32, u32)] = &[
{digits}
];
"""


# --- containment.md §1-§2: size classes and class-seeded band keys -------------------------

CONTAINMENT_BANDINGS = ((64, 1), (32, 2), (24, 3), (16, 5), (12, 8))  # (bands, rows)


def size_class(s):
    """Half octaves, decided in integers (containment.md §1)."""
    if s == 0:
        return 0
    e = s.bit_length() - 1
    return 1 + 2 * e + (1 if s * s >= 1 << (2 * e + 1) else 0)


def class_band_keys(slots, scheme, seed, set_size):
    """Every band key of a containment index's document, numbered flat (containment.md §2)."""
    base, c = derive(scheme, seed, "class"), size_class(set_size)
    keys = []
    for g, (bands, rows) in enumerate(CONTAINMENT_BANDINGS):
        for i in range(bands):
            data = b"".join(x.to_bytes(8, "little") for x in slots[i * rows:(i + 1) * rows])
            keys.append(xxh3(data, mix64((base + ((c << 32) | (g << 16) | i)) & M64)))
    return keys


def containment_main():
    sizes = [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 1023, 1024, 1448, 1449, 2047, 2048,
             2**31 - 1, 2**31, 3037000499, 3037000500, 2**32 - 1, 2**32, 2**63, 2**64 - 1]
    out = {"spec_version": SPEC, "bandings": CONTAINMENT_BANDINGS,
           "classes": [[s, size_class(s)] for s in sizes], "documents": []}
    for text in ["The quick brown fox jumps over the lazy dog.", "日本語のテキストです", "a b"]:
        for scheme, seed in (("oph", 0), ("oph", 7), ("kperm", 7)):
            hashes = shingle_hashes(text, "char", 5, derive(scheme, seed, "shingle"))
            slots = signature(text, scheme, 512, seed, "char", 5)
            size = len(set(hashes))
            for claimed in (size, 1000):
                out["documents"].append({
                    "text": text, "scheme": scheme, "seed": seed, "set_size": claimed,
                    "class": size_class(claimed),
                    "band_keys": [f"{k:016x}" for k in class_band_keys(slots, scheme, seed, claimed)],
                })
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    print()


if __name__ == "__main__":
    if sys.argv[1:] == ["keyed-simhash"]:
        keyed_simhash_main()
    elif sys.argv[1:] == ["keyed-sets"]:
        keyed_sets_main()
    elif sys.argv[1:] == ["tokens"]:
        tokens_main()
    elif sys.argv[1:] == ["unicode-words"]:
        unicode_words_main()
    elif sys.argv[1:] == ["unicode-tables"]:
        unicode_tables_main()
    elif sys.argv[1:] == ["exact"]:
        exact_main()
    elif sys.argv[1:] == ["containment"]:
        containment_main()
    elif sys.argv[1:]:
        sys.exit("usage: reference_sketch.py [keyed-simhash | keyed-sets | tokens | unicode-words | "
                 "unicode-tables | exact | containment]")
    else:
        main()
