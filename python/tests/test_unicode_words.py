"""Unicode word shingles (format/hashing.md §16) through MinHasher(shingle="unicode-word:N"):
equal to the golden vectors of tests/golden/unicode_words.json, and to the independent
reference implementation (tools/conformance/reference_sketch.py, on uniseg and unicodedata2 at
the same Unicode version) on random multilingual texts."""

from __future__ import annotations

import importlib.util
import json
import random
from types import ModuleType
from typing import Any

import pytest

import mhdb
from conftest import REPO, import_or_skip

VECTORS = json.loads((REPO / "tests" / "golden" / "unicode_words.json").read_text())
CASES = VECTORS["cases"]


def hexes(signature: Any) -> list[str]:
    return [f"{int(v):016x}" for v in signature]


def hasher(case: dict[str, Any], k: int) -> mhdb.MinHasher:
    """The hasher of a golden case, at k slots."""
    params = {name: case[name] for name in ("scheme", "seed", "shingle", "nfkc")}
    return mhdb.MinHasher(num_perm=k, **params)


def test_the_vectors_are_of_this_spec() -> None:
    assert VECTORS["spec_version"] == mhdb.SPEC_VERSION
    assert VECTORS["unicode_version"] == "16.0.0"
    assert len(CASES) == 102


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{i}-{c['shingle']}" for i, c in enumerate(CASES)]
)
def test_golden_case(case: dict[str, Any]) -> None:
    h16 = hasher(case, 16)
    assert h16.shingle == case["shingle"]
    assert hexes(h16.sketch(case["text"])) == case["slots16"]
    xxhash = import_or_skip("xxhash")
    s128 = hasher(case, 128).sketch(case["text"])
    assert f"{xxhash.xxh3_64_intdigest(s128.astype('<u8').tobytes()):016x}" == case["digest128"]


def test_the_spec_string_is_parsed_and_refused_as_documented() -> None:
    h = mhdb.MinHasher(shingle="unicode-word:2+fold-digits+fold-punctuation")
    assert h.shingle == "unicode-word:2+fold-punctuation+fold-digits"
    assert mhdb.MinHasher(shingle="unicode-word").shingle == "unicode-word:2"
    # Digit folding: years of any script are one token.
    folded = mhdb.MinHasher(shingle="unicode-word:1+fold-digits")
    assert (folded.sketch("in 2024") == folded.sketch("in ٢٠١٩")).all()
    plain = mhdb.MinHasher(shingle="unicode-word:1")
    assert not (plain.sketch("in 2024") == plain.sketch("in ٢٠١٩")).all()
    for bad in ["word:2+fold-digits", "unicode-word:2+fold-case", "unicode-word:0"]:
        with pytest.raises(ValueError):
            mhdb.MinHasher(shingle=bad)


# Characters of the random texts: letters of scripts that separate words and of those that do
# not, combining marks, digits of several scripts, punctuation UAX #29 keeps inside words and
# other punctuation, symbols and emoji (with ZWJ, modifiers, flags), and white space.
POOLS = [
    "abcdefghijklmnopqrstuvwxyzé",
    "αβγδεζηθ",
    "абвгдежз",
    "אבגדהוזח",
    "ابتثجحخد",
    "日本語中文字漢繁體測試重复检",
    "ぁあいうえおかがきぎくぐ",
    "アイウエオカキクケコヵヶー",
    "한국어텍스트중복검출",
    "กขคงจฉชซะาำิีึืุู่้๊๋็",
    "ກຂຄງຈສຫອະາິີ່້",
    "កខគឃងចឆជ្ាិីុូេែ",
    "ကခဂဃငစဆဇ္်ါာိီ",
    "कखगघङचछज्ािी",
    "\u0301\u0308\u0303\u200d\u200c\u00ad",
    "0123456789٠١٢٣٤٥٦٧٨٩０１２３４５６７８９०१२३४५६७८९๐๑๒",
    ".,:;'’‘\"_-‐–—!?¿¡…。、，：「」«»()[]·‧",
    "😀🦀👍🏽👨👩👧🇯🇵🇫🇷©®™§¶°±×÷$€¥",
    "      \t\n",
]


def random_text(rng: random.Random) -> str:
    """Up to 12 runs of 1 to 5 characters, each mostly of one pool (a quarter of its characters
    from any pool: marks, digits and punctuation inside words), most followed by a space."""
    out = []
    for _ in range(rng.randrange(0, 12)):
        pool = rng.choice(POOLS)
        for _ in range(rng.randrange(1, 6)):
            out.append(rng.choice(pool if rng.random() < 0.75 else rng.choice(POOLS)))
        if rng.random() < 0.6:
            out.append(" ")
    return "".join(out)


def reference() -> ModuleType:
    """tools/conformance/reference_sketch.py, with the UAX #29 and Unicode libraries it needs
    (uniseg, unicodedata2: installed by .ci/run)."""
    import_or_skip("xxhash")
    import_or_skip("uniseg")
    import_or_skip("unicodedata2")
    path = REPO / "tools" / "conformance" / "reference_sketch.py"
    spec = importlib.util.spec_from_file_location("reference_sketch", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SAMPLE = 3000


@pytest.mark.parametrize(
    "shingle", ["unicode-word:1", "unicode-word:2+fold-punctuation+fold-digits"]
)
def test_random_multilingual_texts_match_the_reference(shingle: str) -> None:
    """The reference's shingle hashes of each text, sketched by mhdb, give mhdb's signature of
    the text. At k = 1024 slots and texts of at most 60 tokens, nearly every shingle is alone
    in its bin, so a token or shingle that differed would show in the signature."""
    np = import_or_skip("numpy")
    ref = reference()
    kind, n, folds = ref.parse_shingle(shingle)
    h = mhdb.MinHasher(num_perm=1024, shingle=shingle)
    seed = ref.derive("oph", 0, "shingle")
    rng = random.Random(f"unicode-words {shingle}")
    texts = [random_text(rng) for _ in range(SAMPLE)]
    mismatches = []
    for text, got in zip(texts, h.sketch_many(texts)):
        hashes = ref.shingle_hashes(text, kind, n, seed, folds=folds)
        want = h.sketch_hashes(np.array(hashes, dtype=np.uint64))
        if not (got == want).all():
            mismatches.append(text)
    assert not mismatches, f"{len(mismatches)} of {SAMPLE} differ, e.g. {mismatches[:3]!r}"


def test_an_index_of_unicode_words_finds_a_reformatted_chinese_copy(tmp_path: Any) -> None:
    # The same Chinese sentence with other punctuation, spacing and a changed year: no white
    # space separates its words, so only Unicode word shingles see the two as one text.
    original = "数据库在每次写入之前先记录日志，崩溃之后按日志恢复，2025年版本已经发布。"
    copy = "数据库 在每次写入之前先记录日志, 崩溃之后按日志恢复; 2026年版本已经发布!"
    other = "这是一段完全不同的文字，讲的是天气、山川和河流，没有任何共同的内容。"
    path = tmp_path / "idx"
    with mhdb.Index.create(path, shingle="unicode-word:1+fold-punctuation+fold-digits") as idx:
        idx.insert("original", text=original)
        idx.insert("other", text=other)
        assert idx.stats()["params"]["shingle"] == "unicode-word:1+fold-punctuation+fold-digits"
    with mhdb.Index.open(path, read_only=True) as idx:
        found = idx.query(text=copy, threshold=0.8)
    assert [key for key, _ in found] == ["original"]
    assert found[0][1] > 0.9
