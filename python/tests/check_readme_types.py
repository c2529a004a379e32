"""Type-checks every Python example of the documentation against the installed ``mhdb``.

Each ```` ```python ```` block of README.md, python/README.md and python/SPARK.md is written to
a file of its own (named after the document and the line the block starts on) in a temporary
directory and checked there by mypy with python/pyproject.toml's settings (strict), except
that an example may define an unannotated helper as a user would: what is checked is that the
package's stubs type the examples' own calls and results. With them, ``stub_types.py`` (beside
this file): the result types the stubs give per index kind. Not a pytest test: CI runs it
after installing mypy (``.ci/run``)::

    python python/tests/check_readme_types.py

Exits with mypy's status; 1 also when a document that must have examples has none.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCUMENTS = ("README.md", "python/README.md", "python/SPARK.md")
# A document where finding no example means the extraction broke, not that there is none.
MUST_HAVE_EXAMPLES = ("README.md", "python/SPARK.md")
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def examples(document: str) -> list[tuple[str, str]]:
    """``(file name, code)`` of every python block of ``document``."""
    text = (REPO / document).read_text(encoding="utf-8")
    stem = re.sub(r"\W", "_", document.removesuffix(".md"))
    found = []
    for block in BLOCK.finditer(text):
        line = text.count("\n", 0, block.start(1)) + 1
        found.append((f"{stem}_line{line}.py", block.group(1)))
    return found


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for document in DOCUMENTS:
            blocks = examples(document)
            if not blocks and document in MUST_HAVE_EXAMPLES:
                print(f"{document}: no ```python block found", file=sys.stderr)
                return 1
            for name, code in blocks:
                (pathlib.Path(tmp) / name).write_text(code, encoding="utf-8")
                files.append(name)
        print(f"mypy on {len(files)} examples: {', '.join(files)}, and stub_types.py")
        stub_types = pathlib.Path(__file__).with_name("stub_types.py")
        (pathlib.Path(tmp) / stub_types.name).write_text(stub_types.read_text(encoding="utf-8"))
        files.append(stub_types.name)
        # Run in the temporary directory, so that `import mhdb` finds the installed package
        # (its stubs and py.typed), not the source tree.
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "mypy",
                "--config-file",
                str(REPO / "python" / "pyproject.toml"),
                "--cache-dir",
                str(pathlib.Path(tmp) / ".mypy_cache"),
                "--allow-untyped-defs",
                "--allow-untyped-calls",
                *files,
            ],
            cwd=tmp,
        )
        return done.returncode


if __name__ == "__main__":
    sys.exit(main())
