"""The exceptions of mhdb: one base class, one subclass per kind of failure.

Every exception carries the details the Rust ``mhdb::Error`` has, as attributes that are
``None`` where they do not apply:

- ``path``: the file or directory involved (``str``);
- ``offset``: the byte offset of damage within ``path`` (``int``, corruption only);
- ``detail``: what was found or what is wrong, in words (``str``);
- ``parameter``: the name of the bad parameter (``str``, parameter errors only).
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "Error",
    "CorruptionError",
    "LockedError",
    "NotFoundError",
    "InvalidParameterError",
    "ParameterMismatchError",
    "SchemeMismatchError",
    "ReadOnlyError",
    "UnsupportedVersionError",
    "IoError",
]


class Error(Exception):
    """Base class of every error mhdb raises."""

    path: Optional[str] = None
    offset: Optional[int] = None
    detail: Optional[str] = None
    parameter: Optional[str] = None


class CorruptionError(Error):
    """Bytes on disk are not what mhdb wrote (a checksum, length or invariant failed).

    ``path`` names the damaged file and ``offset`` the byte offset of the problem in it.
    """


class LockedError(Error):
    """Another process holds the database open for writing (``path`` is the lock file)."""


class NotFoundError(Error):
    """There is no mhdb database at ``path`` (no ``CURRENT`` file)."""


class InvalidParameterError(Error, ValueError):
    """A parameter is out of range or inconsistent (also a ``ValueError``).

    ``parameter`` names it and ``detail`` says what is wrong.
    """


class ParameterMismatchError(InvalidParameterError):
    """Stored parameters differ from the ones the caller supplied.

    ``parameter`` names the parameter; ``stored`` and ``requested`` are the two values.
    """

    stored: Optional[str] = None
    requested: Optional[str] = None


class SchemeMismatchError(InvalidParameterError):
    """The index's signatures come from another signature scheme than the caller's.

    Raised, for example, for a text query on an index of datasketch signatures, or for a
    datasketch ``MinHash`` of another scheme or seed: signatures of different schemes are
    never mixed.
    """


class ReadOnlyError(Error):
    """A write was attempted on an index opened read-only."""


class UnsupportedVersionError(Error):
    """A file was written by a newer (or unknown) version of the format or hash spec.

    ``found`` is the version in the file, ``supported`` the newest this build reads.
    """

    found: Optional[int] = None
    supported: Optional[int] = None


class IoError(Error, OSError):
    """The operating system refused an operation (also an ``OSError``).

    ``path`` names the file, ``op`` what mhdb was doing (e.g. ``"fsync"``), and ``errno``
    the OS error number when there is one. After an I/O failure during a write, the handle
    refuses further writes until it is reopened (which recovers): those refusals carry
    ``cause``, the message of the failure that latched the handle. A write that committed
    returns normally even if the upkeep after it (a flush, an automatic compaction) failed;
    that failure is latched (``Index.write_failure``), and the next write raises with it as ``cause``.
    """

    op: Optional[str] = None
    cause: Optional[str] = None


for _cls in (
    Error,
    CorruptionError,
    LockedError,
    NotFoundError,
    InvalidParameterError,
    ParameterMismatchError,
    SchemeMismatchError,
    ReadOnlyError,
    UnsupportedVersionError,
    IoError,
):
    _cls.__module__ = "mhdb"
del _cls
