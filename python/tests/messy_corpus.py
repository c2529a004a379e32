"""A deterministic, messy, multilingual corpus with planted near-duplicates, for the Spark
tests and tools/bench/bench_spark.py.

Documents mix English, German, French, Russian, Greek, Chinese, Japanese, Arabic and Hindi
words with emoji, HTML debris, URLs, odd casing and every kind of white space (tabs, no-break
and ideographic spaces). Planted on top, so that dedup has real work:

- families of edited copies (1 % to 25 % of words replaced, dropped or inserted, casing and
  spacing changed), often copies of copies, so that clusters chain and are not all stars;
- a boilerplate banner in many copies differing only in case and white space (identical
  after normalization: exact copies);
- a boilerplate footer in many near copies (each with its own issue number), so that its
  buckets exceed a small bucket cap;
- a few empty and white-space-only documents (the empty set: all similar to one another);
- the repository's own sample texts (samples/corpus.jsonl, samples/texts).

Rows are ``(id, text, pos)``: ``pos`` is the line order (how ``mhdb add`` numbers documents)
and ids are shuffled tokens, so id order is not insertion order.
"""

from __future__ import annotations

import json
import pathlib
import random

REPO = pathlib.Path(__file__).resolve().parents[2]

WORDS = {
    "en": "river city morning train market window bakery harbour letter garden winter summer storm "
    "lantern journey library station bridge orchard festival recipe quiet golden narrow ancient "
    "crowded forgotten bright windy hidden describes remembers celebrates questions maps records".split(),
    "de": "Straße Größe über Mädchen schön Frühling Bäckerei Käse Brücke Fußgänger Übung Gemüse "
    "Häuser Öffnungszeiten grün weiß heißt Bahnhof Stadtplan Wetterbericht".split(),
    "fr": "été forêt château garçon élève crème brûlée naïve cœur fenêtre déjà où très Noël "
    "marché rivière bibliothèque mère frère".split(),
    "ru": "привет город река книга зима лето окно дорога история погода рынок поезд утро вечер "
    "библиотека мост сад".split(),
    "el": "θάλασσα ήλιος βιβλίο δρόμος πόλη νερό αγορά τρένο πρωί βράδυ γέφυρα κήπος".split(),
    "zh": "天气 城市 河流 书店 早晨 晚上 朋友 学习 市场 火车 图书馆 桥梁 花园 历史".split(),
    "ja": "東京 さくら カメラ ラーメン 電車 図書館 天気予報 おはよう ありがとう 市場 駅前".split(),
    "ar": "مدينة كتاب نهر شمس قمر مطر سوق قطار صباح مساء مكتبة جسر حديقة".split(),
    "hi": "नदी शहर किताब बारिश बाज़ार रेलगाड़ी सुबह शाम पुस्तकालय पुल बगीचा".split(),
}
LANGS = sorted(WORDS)
DEBRIS = ["<p>", "</p>", "&nbsp;", "<br/>", "🙂", "🚆", "☕", "🌧️", "—", "«", "»", "…", "#", "**"]
SPACES = [" ", " ", " ", " ", "  ", "\t", "\u00a0", "\u3000", " \n "]
BANNER = (
    "We use cookies to improve your experience. By continuing to browse this site you agree to "
    "our use of cookies. Nous utilisons des cookies. Wir verwenden Cookies. Мы используем "
    "файлы cookie. 本网站使用cookie。 Accept all / Tout accepter / Alle akzeptieren"
)
FOOTER = (
    "Subscribe to our newsletter for weekly updates from the harbour district. Follow us on "
    "social media. Contact the press office at 12 Harbour Street. Impressum / Mentions légales "
    "/ Datenschutz / Конфиденциальность / 隐私政策 / プライバシー"
)


def _word(rng: random.Random, lang: str) -> str:
    w = rng.choice(WORDS[lang if rng.random() < 0.85 else rng.choice(LANGS)])
    r = rng.random()
    if r < 0.05:
        w = w.upper()
    elif r < 0.15:
        w = w.capitalize()
    if rng.random() < 0.04:
        w += rng.choice(DEBRIS)
    if rng.random() < 0.01:
        w = f"https://example.org/{rng.randrange(10**6)}/{w}"
    return w


def _join(rng: random.Random, words: list[str]) -> str:
    return "".join(w + rng.choice(SPACES) for w in words).strip(" ")


def _edit(rng: random.Random, words: list[str], rate: float) -> list[str]:
    out: list[str] = []
    for w in words:
        r = rng.random()
        if r < rate / 3:
            continue  # dropped
        if r < 2 * rate / 3:
            out.append(_word(rng, rng.choice(LANGS)))  # replaced
            continue
        out.append(w.swapcase() if rng.random() < 0.02 else w)
        if r < rate:
            out.append(_word(rng, rng.choice(LANGS)))  # inserted
    return out


def _samples() -> list[str]:
    texts = [
        json.loads(line)["text"]
        for line in (REPO / "samples" / "corpus.jsonl").read_text().splitlines()
    ]
    texts += [p.read_text() for p in sorted((REPO / "samples" / "texts").iterdir())]
    return texts


def build(
    n: int,
    seed: int = 2024,
    banner_copies: int = 40,
    with_samples: bool = True,
    footer_copies: int = 30,
) -> list[dict]:
    """About ``n`` documents as ``{"id", "text", "pos"}`` dicts, deterministic in ``seed``."""
    rng = random.Random(seed)
    texts: list[str] = _samples() if with_samples else []
    for _ in range(banner_copies):
        spaced = _join(rng, BANNER.split(" "))
        texts.append(spaced.upper() if rng.random() < 0.3 else spaced)
    for issue in rng.sample(range(10**5, 10**6), footer_copies):
        texts.append(_join(rng, [f"Issue {issue}."] + FOOTER.split(" ")))
    texts += ["", "   ", "\t\n", "\u3000", ""]
    while len(texts) < n:
        lang = rng.choice(LANGS)
        words = [_word(rng, lang) for _ in range(rng.randrange(25, 140))]
        texts.append(_join(rng, words))
        if rng.random() < 0.4:
            family = [words]
            for _ in range(rng.randrange(1, 6)):
                parent = rng.choice(family)  # copies of copies: clusters chain
                child = _edit(rng, parent, rng.choice([0.01, 0.03, 0.05, 0.1, 0.15, 0.25]))
                family.append(child)
                texts.append(_join(rng, child))
    texts = texts[:n]
    rng.shuffle(texts)
    ids = rng.sample(range(10**9), len(texts))
    return [
        {"id": f"doc-{i:09d}", "text": t, "pos": pos} for pos, (i, t) in enumerate(zip(ids, texts))
    ]


def write_jsonl(docs: list[dict], path: pathlib.Path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"id": d["id"], "text": d["text"]}, ensure_ascii=False) + "\n")
