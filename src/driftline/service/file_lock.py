"""The leader lock on SQLite: an exclusive, non-blocking flock on a sidecar file next to the database.

SQLite has no advisory locks; its writers share one local file, so they all run on one host, where a flock elects
one of them. The kernel releases a flock when its holder exits, even on kill -9, and a flock belongs to the open
file, not to the process, so two locks in one process exclude each other too (two Services in a test).
"""

from __future__ import annotations

import fcntl
import logging
import os
import urllib.parse

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from ..storage.urls import normalise_url, sqlite_file

log = logging.getLogger(__name__)


def sqlite_database_path(url: str) -> str | None:
    """The absolute path of the SQLite file a URL opens (plain path or `file:` URI), beside which its leader lock
    lies; None for another backend and for an in-memory database, which no other process can open."""
    path = sqlite_file(url)
    if path is not None:
        return path
    try:
        u = make_url(normalise_url(url))
    except ArgumentError:
        return None
    name = u.database or ""
    if u.get_backend_name() != "sqlite" or not name.startswith("file:"):
        return None  # PostgreSQL, `sqlite://` or `sqlite:///:memory:`
    if str(u.query.get("uri", "")).lower() not in ("true", "1"):
        return os.path.abspath(name)  # not a URI: pysqlite opens a file of that very name
    if u.query.get("mode") == "memory":
        return None
    rest = name[len("file:"):]
    if rest.startswith("//"):  # file://HOST/PATH (SQLite accepts an empty host or localhost)
        rest = "/" + rest[2:].partition("/")[2]
    rest = urllib.parse.unquote(rest)
    return None if rest in ("", ":memory:") else os.path.abspath(rest)


class FileLock:
    """Exclusive flock on `path` (created when missing), taken without waiting and confirmed by held()."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None
        self._problem = ""
        """The last failure logged (one warning per new problem, not one per scrape)."""

    def held(self) -> bool:
        """Take or confirm the lock; False while another process (or another FileLock) holds it, or when the
        file cannot be opened. A held lock whose file was removed or replaced is given up and taken anew."""
        if self._fd is not None:
            if self._same_file():
                return True
            self._warn(f"leader lock file {self.path} was removed or replaced: lock given up")
            self.release()
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as err:
            self._warn(f"leader lock file {self.path} cannot be opened: {err}")
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if not isinstance(err, BlockingIOError):
                self._warn(f"leader lock file {self.path} cannot be locked: {err}")
            return False
        self._fd, self._problem = fd, ""
        if not self._same_file():  # removed between open and flock: a lock on a file nobody else can see
            self.release()
            return False
        return True

    def release(self) -> None:
        """Unlock and close the file (left in place: deleting it could let two processes lock two files)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def _same_file(self) -> bool:
        assert self._fd is not None
        try:
            now, ours = os.stat(self.path), os.fstat(self._fd)
        except OSError:
            return False
        return (now.st_dev, now.st_ino) == (ours.st_dev, ours.st_ino)

    def _warn(self, problem: str) -> None:
        if problem != self._problem:
            log.warning("%s", problem)
            self._problem = problem
