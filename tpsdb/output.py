"""Writing output files safely: whole or not at all, never through a planted link; CSV cells no spreadsheet runs."""

from __future__ import annotations

import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator


def write_atomic(path: Path, content: str) -> None:
    """Write `path` through a new temporary file beside it, then rename it into place.

    The temporary file is created exclusively under a random name (mkstemp: O_CREAT|O_EXCL), so a symlink planted
    where tpsdb writes is never followed; the rename replaces a link at `path` itself, not its target. A reader
    sees the old file or the new one, never half of one. Raises OSError (a missing folder, a read-only disk…)."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(21, "Is a directory", str(path))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(content)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a published file is for others to read
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_file(path: Path) -> Iterator[IO[str]]:
    """`with atomic_file(path) as handle`: text written to `handle` becomes `path` when the block ends without an
    error, and nothing is left otherwise (as write_atomic, for output written as it comes). The handle's
    `temporary_path` is the file being written: a hard stop that skips this block's end removes it."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(21, "Is a directory", str(path))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.temporary_path = tmp  # type: ignore[attr-defined]
            yield handle
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def os_error_text(error: OSError, path: Path | str) -> str:
    """`PATH: reason` for a file that could not be written or read."""
    return f"{error.filename or path}: {error.strerror or error}"


# ------------------------------------------------------------------------------------------------------ CSV
# A cell a spreadsheet would read as a formula (OWASP "CSV injection"): it starts with one of these characters.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def spreadsheet_safe(value):
    """A CSV cell that a spreadsheet shows as text, never runs: text starting with = + - @ tab or CR gets a leading
    `'` (OWASP's advice). Numbers stay numbers: an int or float, or text that is exactly a number such as `-3.5`,
    is not a formula, and a spreadsheet reads it as the number it is."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value
