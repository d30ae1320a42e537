"""Where things are: the database URL, the project's folders, GitHub's addresses and token (flags and env vars)."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def _in_checkout(folder: Path) -> bool:
    return (folder / "pyproject.toml").is_file() and (folder / "migrations").is_dir()


# The project's folders (migrations/, sources/, tables/, data/seed.sql, data/reference/) live at the top of the
# checkout, which is where a clone or an editable install finds them. A wheel ships the same folders inside the
# package, as tpsdb/_bundled/ (mapped in pyproject.toml), laid out the same way. They stay files on disk: Alembic
# needs a real folder.
IN_CHECKOUT = _in_checkout(_PACKAGE_DIR.parent)
PROJECT_ROOT = _PACKAGE_DIR.parent if IN_CHECKOUT else _PACKAGE_DIR / "_bundled"
DATA_DIR = PROJECT_ROOT / "data"
SOURCES_DIR = PROJECT_ROOT / "sources"
MIGRATIONS_DIR = PROJECT_ROOT / "migrations"
SEED_SQL = DATA_DIR / "seed.sql"
REFERENCE_DIR = DATA_DIR / "reference"
TABLES_DIR = PROJECT_ROOT / "tables"
# The checkout keeps its database under data/; an installed tpsdb has no folder of its own to write in (its package
# folder may be read-only or shared), so its default is tpsdb.sqlite in the current folder, like git's or make's
# files: `tpsdb init` in an empty folder makes a database there.
DEFAULT_DB_PATH = DATA_DIR / "tpsdb.sqlite" if IN_CHECKOUT else Path("tpsdb.sqlite")


def database_url(explicit: str | None = None) -> str:
    """`--db` wins, then TPSDB_DATABASE_URL, then DEFAULT_DB_PATH (data/tpsdb.sqlite in a checkout, ./tpsdb.sqlite
    installed). A bare path means SQLite."""
    url = explicit or os.environ.get("TPSDB_DATABASE_URL") or str(DEFAULT_DB_PATH)
    if "://" not in url:
        from sqlalchemy.engine import URL

        # Rendered by SQLAlchemy, which %-escapes the path: a file named `a#b`, `a@b` or `pct%41` stays that name.
        url = URL.create("sqlite", database=str(Path(url).expanduser().resolve())).render_as_string()
    return url


def github_url() -> str:
    return os.environ.get("TPSDB_GITHUB_URL", "https://github.com").rstrip("/")


class TokenError(ValueError):
    """The token's variable holds something no token can hold. The message never shows the token."""


def github_token() -> str | None:
    """The token for GitHub's GraphQL API. Only ever passed to the HTTP layer; never logged or stored.

    Surrounding whitespace is dropped (an env file with CRLF line ends leaves a trailing CR); a token with any
    other control or non-ASCII character is refused: sent as a header it would be quoted back in an error.
    """
    for name in ("TPSDB_GITHUB_TOKEN", "GITHUB_TOKEN"):
        token = (os.environ.get(name) or "").strip()
        if not token:
            continue
        bad = next((i for i, c in enumerate(token) if not " " <= c <= "~"), None)
        if bad is not None:
            what = "a non-ASCII" if ord(token[bad]) > 127 else "a control"
            raise TokenError(f"{name}: the token holds {what} character (character {bad + 1} of {len(token)}); "
                             "set it again without it (the token is not shown)")
        return token
    return None


def sources_dir() -> Path:
    return Path(os.environ.get("TPSDB_SOURCES_DIR", SOURCES_DIR))


def http_settings() -> dict:
    """Politeness and retry settings for the HTTP session; env overrides serve mirrors and tests."""
    env = os.environ.get
    return {
        "timeout_s": float(env("TPSDB_HTTP_TIMEOUT_S", 20)),
        "pause_s": float(env("TPSDB_HTTP_PAUSE_S", 1.0)),
        "max_attempts": int(env("TPSDB_HTTP_MAX_ATTEMPTS", 5)),
        "max_total_s": float(env("TPSDB_HTTP_MAX_TOTAL_S", 120)),
        "backoff_s": float(env("TPSDB_HTTP_BACKOFF_S", 1.0)),
        # one answer's total time (not only each socket read) and its largest decoded size (tpsdb.collect.http)
        "max_answer_s": float(env("TPSDB_HTTP_MAX_ANSWER_S", 30)),
        "max_body_bytes": int(env("TPSDB_HTTP_MAX_BYTES", 64 * 2**20)),
    }
