"""mhdb: an embedded, persistent, crash-safe MinHash-LSH index database.

- :class:`MinHasher` turns text into MinHash signatures (``numpy`` ``uint64`` arrays),
  bit-identical to the Rust crate and to ``format/hashing.md``.
- :class:`Index` is the persistent index in a directory: insert, delete, query, dedup,
  compact, export, merge. Every call that does real work releases the GIL.
- :class:`Shards` (``Index.open_many(paths)``) is indexes opened read-only as one: the
  shards of an index built in parallel, queried side by side instead of merged.
- :mod:`mhdb.datasketch` is a drop-in front for ``datasketch.MinHashLSH`` that persists.
- :mod:`mhdb.spark` (``pip install './python[spark]'``, imported on demand) signs, builds
  shards and deduplicates on Apache Spark with the answers of ``mhdb dedup``.
- Exceptions derive from :class:`Error`; see :mod:`mhdb._errors` for the attributes.

Keys are ``str`` or ``bytes``; a ``str`` key is stored as its UTF-8 bytes, and keys come
back as ``str`` when their bytes are valid UTF-8, else as ``bytes``.
"""

from . import _errors
from ._errors import *  # noqa: F403  (Error and its subclasses)
from ._mhdb import (
    MAX_KEY_LEN,
    SPEC_VERSION,
    Index,
    MinHasher,
    QueryIterator,
    Shards,
    __version__,
)

__all__ = [
    "MinHasher",
    "Index",
    "QueryIterator",
    "Shards",
    "SPEC_VERSION",
    "MAX_KEY_LEN",
    "__version__",
    *_errors.__all__,
]
