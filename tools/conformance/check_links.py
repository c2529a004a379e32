#!/usr/bin/env python3
"""Checks that the repository's references to benchmarks and tools resolve.

In every file git tracks outside src/ (documentation, tests, benches, Python, shell scripts,
.ci/run):

* a link `BENCHMARKS.md#anchor` (or into `benchmarks/history/*.md`) names a heading of that file;
* a section cited by name after BENCHMARKS.md (a comma or parenthesis, then the name in double
  quotes) is the start of one of its headings; an unquoted name after "BENCHMARKS.md," is
  refused, since it cannot be checked;
* a path `tools/....py` or `tools/....sh`, and a module `tools.bench.NAME`, exists.

A cited section that is no longer in BENCHMARKS.md but is in benchmarks/history/ is reported
as a warning (the text can still be found there); anything else unresolved is an error.

src/ is not scanned: the library's comments give their reasons in place rather than pointing
at benchmark documents or tools, and are reviewed with the code.

    python3 tools/conformance/check_links.py      # exit 1 on an error
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HISTORY = "benchmarks/history"
SCANNED_SUFFIXES = (".md", ".rs", ".py", ".pyi", ".sh", ".toml")

# A comment marker at the start of a continued line, so that a citation wrapped over two
# comment lines reads as one.
CONTINUATION = re.compile(r"\n[ \t]*(?://[/!]?|#)?[ \t]*")
CITED = re.compile(r'BENCHMARKS\.md`?\s*(?:,\s*|\(\s*)(?:section\s+)?"([^"]+)"')
UNQUOTED = re.compile(r'BENCHMARKS\.md`?\s*(?:,\s*|\(\s*)(?:section\s+)?(?=[A-Z])(\w[^.;)\n]*)')
LINK = re.compile(r"((?:\.\./)*(?:BENCHMARKS\.md|benchmarks/history/[\w.-]+\.md))#([\w-]+)")
TOOL_PATH = re.compile(r"(?<![\w./-])tools/[\w/]+\.(?:py|sh)\b")
TOOL_MODULE = re.compile(r"(?<![\w.])tools\.bench\.([a-z_][a-z0-9_]*)\b")


def headings(path):
    """The headings of a Markdown file (backticks removed), outside code blocks."""
    found, fenced = [], False
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and re.match(r"#{1,6} ", line):
                found.append(line.lstrip("#").strip().replace("`", ""))
    return found


def anchors(names):
    """GitHub's anchors for these headings: lower case, punctuation dropped, spaces to
    hyphens, a repeated anchor numbered."""
    seen, out = {}, set()
    for name in names:
        slug = re.sub(r"[^\w\- ]", "", name.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def tracked_files():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.split("\n")
    return [p for p in out if not p.startswith("src/")
            and (p.endswith(SCANNED_SUFFIXES) or p == ".ci/run")]


def main():
    current = headings("BENCHMARKS.md")
    history_files = sorted(
        f"{HISTORY}/{name}" for name in os.listdir(os.path.join(ROOT, HISTORY))
        if name.endswith(".md") and name != "README.md")
    history = {path: headings(path) for path in history_files}
    targets = {"BENCHMARKS.md": anchors(current)}
    targets.update({path: anchors(names) for path, names in history.items()})
    me = os.path.relpath(os.path.abspath(__file__), ROOT)

    errors, warnings = [], []
    for path in tracked_files():
        if path == me or not os.path.isfile(os.path.join(ROOT, path)):
            continue
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        joined = CONTINUATION.sub(" ", text)
        in_history = path.startswith(HISTORY + "/")

        for name in CITED.findall(joined):
            name = " ".join(name.replace("`", "").split())
            if any(h.startswith(name) for h in current):
                continue
            where = [p for p, names in history.items() if any(h.startswith(name) for h in names)]
            if where and in_history:
                continue
            if where:
                warnings.append(f'{path}: BENCHMARKS.md, "{name}" is now in {where[0]}')
            else:
                errors.append(f'{path}: BENCHMARKS.md has no section "{name}"')
        for name in UNQUOTED.findall(joined):
            errors.append(f'{path}: BENCHMARKS.md, {name.strip()!r}: quote the section name')

        for target, anchor in LINK.findall(text):
            target = re.sub(r"^(\.\./)+", "", target)
            if target not in targets:
                errors.append(f"{path}: {target} does not exist")
            elif anchor not in targets[target]:
                errors.append(f"{path}: {target}#{anchor} names no heading")

        for ref in set(TOOL_PATH.findall(text)):
            if not os.path.exists(os.path.join(ROOT, ref)):
                errors.append(f"{path}: {ref} does not exist")
        for module in set(TOOL_MODULE.findall(text)):
            if not os.path.exists(os.path.join(ROOT, "tools", "bench", module + ".py")):
                errors.append(f"{path}: tools.bench.{module} does not exist")

    for w in warnings:
        print("warning:", w)
    for e in errors:
        print("error:", e)
    print(f"check_links: {len(errors)} errors, {len(warnings)} warnings")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
