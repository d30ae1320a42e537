"""Settings the GitHub kinds share: the web and API addresses (a mirror or a test server in their place) and the
token. Read when a run starts, never stored; the token only ever goes to the HTTP layer, and only for the API's own
origin (scheme, host, port): a next-page link elsewhere fails the read (tpsdb.collect.http.check_same_origin)."""

from __future__ import annotations

import os
import re
from typing import ClassVar

from tpsdb import config
from tpsdb.kinds.base import KindSettingsError, SourceKind

GITHUB = "https://github.com"
GITHUB_API = "https://api.github.com"


def web_url() -> str:
    """TPSDB_GITHUB_URL, default https://github.com."""
    return config.github_url()


def api_url() -> str:
    """The REST API's base, TPSDB_GITHUB_API_URL (default https://api.github.com). A value ending in /graphql (how
    the variable named the GraphQL endpoint before there was a REST kind) names the same API."""
    value = os.environ.get("TPSDB_GITHUB_API_URL") or GITHUB_API
    return value.rstrip("/").removesuffix("/graphql")


def graphql_url() -> str:
    return api_url() + "/graphql"


def token() -> str | None:
    """TPSDB_GITHUB_TOKEN, else GITHUB_TOKEN, else None. A token no header can carry is a settings error."""
    try:
        return config.github_token()
    except config.TokenError as error:
        raise KindSettingsError(str(error)) from None


def rebase(url: str, served_from: str, public: str) -> str:
    """The public address of a URL fetched from `served_from` (a mirror or a test server standing in for `public`)."""
    base = served_from.rstrip("/")
    return public + url[len(base):] if url.startswith(base) else url


class GitHubKind(SourceKind):
    """A kind of source at one GitHub address (`https://github.com/OWNER/REPO/<what>/N`)."""

    URL: ClassVar[re.Pattern[str]]  # its groups: owner, repo, number
    ADDRESS: ClassVar[str]  # what `check` names: "discussions/N"

    @classmethod
    def check(cls, spec) -> str | None:
        return None if cls.URL.match(spec.url) else f"url: not a https://github.com/OWNER/REPO/{cls.ADDRESS} address"

    @property
    def thread(self) -> tuple[str, str, int]:
        """(owner, repo, number) of the source's address."""
        owner, repo, number = self.URL.match(self.spec.url).groups()
        return owner, repo, int(number)

    def read_token(self) -> str | None:
        """The token (KindSettingsError for one no header can carry), kept out of every error message."""
        self._token = token()
        self.secrets = [self._token] if self._token else []
        return self._token
