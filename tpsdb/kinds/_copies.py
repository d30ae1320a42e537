"""Reading a source's [seed] copies (`tpsdb load`) from the shared folder, for every kind that loads copies: a
copy is a regular file inside that folder (after its links are followed), no larger than a fetched answer may be,
so that a source file cannot make a load read /etc/passwd through `../` or a link, wait for ever on a FIFO, or
hold a file of gigabytes in memory. Each refusal is a SeedError naming the copy and the reason."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tpsdb import config


def inside(path: str) -> bool:
    """A relative path that stays where it starts: not empty, not absolute, no `..` (the links a path may pass
    through are followed and checked when the copy is read: read_copy)."""
    return bool(path) and not path.startswith(("/", "\\")) and ".." not in path.replace("\\", "/").split("/")


class SeedError(ValueError):
    """A [seed] copy cannot be used (missing, or not what the source file says): nothing is loaded."""


def read_copy(shared: Path, relative: str, key: str) -> tuple[bytes, Path]:
    """The bytes of the copy at `relative` under `shared`, and its path. Raises SeedError."""
    where = shared / relative
    limit = config.http_settings()["max_body_bytes"]
    try:
        real, root = where.resolve(strict=True), shared.resolve(strict=True)
        if not real.is_relative_to(root):
            raise SeedError(f"{key}: seed copy {where}: outside the shared folder {shared} (it leads to {real})")
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opened without waiting for a writer
        with os.fdopen(fd, "rb") as handle:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):
                raise SeedError(f"{key}: seed copy {where}: not a regular file")
            if status.st_size > limit:
                raise SeedError(f"{key}: seed copy {where}: {status.st_size} bytes, more than a fetched answer "
                                f"may hold ({limit}: TPSDB_HTTP_MAX_BYTES)")
            body = handle.read(limit + 1)
    except OSError as error:
        raise SeedError(f"{key}: seed copy {where}: {error.strerror or error}") from None
    if len(body) > limit:  # grown while read
        raise SeedError(f"{key}: seed copy {where}: more than {limit} bytes")
    return body, where
