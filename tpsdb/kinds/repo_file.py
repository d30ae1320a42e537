"""`repo_file`: one file in a GitHub repository at a path, read by a dataset reader (tpsdb.readers), every
version of it: the commits that changed the path (REST: `GET /repos/O/N/commits?path=P`, conditionally), then the
file's bytes at each of those commits (raw contents, immutable per commit: a copy already archived answers 304 or
the same bytes), then the sibling files the reader needs, at the newest commit.

Each version is one post (`<path>@<commit>`, its permalink the file's blob URL at that commit, its date the
commit's). A run that several versions repeat is ONE figure, cited at the commit where it first appears: the reader
gives each run a slot from its identity, and a version's post keeps only the slots no earlier version had. A
version's post names the versions before it (its body's first line), so that a version newly seen between two
stored ones re-derives the later ones and no run is stored twice.

Settings of the source file:
    url = "https://github.com/OWNER/NAME/blob/<commit>/<path>"   the version the seed cites
    repo = "OWNER/NAME"; path = "<path in repo>"; format = "<reader NAME>"
    siblings = ["<repo path>", …]   optional: other files of the repo the reader needs (FileContext.siblings)
    [seed] retrieved_at = "YYYY-MM-DD"; copies = [{file = "datasets/…", commit = "<40 hex>", date = "YYYY-MM-DD"}, …]
        optional: byte-identical copies (oldest first) that `tpsdb load` reads offline through this same kind;
        sibling copies sit at the same place relative to the copy as in the repository, or are listed in the copy
        as `siblings = {"<repo path>" = "<copy path>"}`.
Environment: TPSDB_GITHUB_API_URL (default https://api.github.com), TPSDB_GITHUB_RAW_URL (default
https://raw.githubusercontent.com), the token of TPSDB_GITHUB_TOKEN or GITHUB_TOKEN (optional)."""

from __future__ import annotations

import json
import os
import posixpath
import re
from datetime import date, datetime, time, timezone
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from tpsdb.collect.completeness import Completeness, Count
from tpsdb.collect.extract import Candidate, PostContext
from tpsdb.collect.github import PageFormatError
from tpsdb.collect.github_rest import next_link
from tpsdb.collect.http import Fetched, PoliteSession
from tpsdb.kinds import _github
from tpsdb.kinds._copies import SeedError, inside, read_copy
from tpsdb.kinds.base import Archive, Post, SourceKind

RAW = "https://raw.githubusercontent.com"
PER_PAGE = 100
MAX_PAGES = 100  # 10,000 commits of one file: a listing that goes on beyond is not GitHub's (a server that lies)
SEED = "seed"  # the transport of a load from copies
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_EARLIER = "earlier versions:"


def raw_url() -> str:
    """TPSDB_GITHUB_RAW_URL, default https://raw.githubusercontent.com (a test server in its place)."""
    return (os.environ.get("TPSDB_GITHUB_RAW_URL") or RAW).rstrip("/")


def blob_url(repo: str, commit: str, path: str) -> str:
    """The public address of a file at a commit (what a figure cites)."""
    return f"{_github.GITHUB}/{repo}/blob/{commit}/{quote(path)}"


class RepoFile(SourceKind):
    name = "repo_file"

    def __init__(self, spec):
        super().__init__(spec)
        self._token: str | None = None
        self._candidates: dict[str, list[Candidate]] = {}  # per post, computed by `read` (it sees every version)

    # ------------------------------------------------------------------------------------------ settings
    @classmethod
    def check(cls, spec) -> str | None:
        from tpsdb import readers

        s = spec.settings
        repo, path = s.get("repo"), s.get("path")
        if not isinstance(repo, str) or not _REPO.match(repo):
            return "repo: not OWNER/NAME"
        if not isinstance(path, str) or not path or path.startswith("/"):
            return "path: not a path in the repository"
        if s.get("format") not in readers.names():
            return f"format: {s.get('format')!r} is not one of {', '.join(readers.names())}"
        siblings = s.get("siblings", [])
        if not isinstance(siblings, list) or not all(isinstance(p, str) and inside(p) for p in siblings):
            return "siblings: not a list of paths in the repository"
        prefix = f"{_github.GITHUB}/{repo}/blob/"
        if not spec.url.startswith(prefix) or not spec.url.endswith("/" + quote(path)) \
                or not _COMMIT.match(spec.url[len(prefix):].split("/", 1)[0]):
            return f"url: not {prefix}<commit>/{quote(path)}"
        problem = _check_seed(s.get("seed"))
        if problem:
            return problem
        unknown = sorted(set(s) - {"repo", "path", "format", "siblings", "seed"})
        return f"{unknown[0]}: not a setting of the repo_file kind" if unknown else None

    @property
    def repo(self) -> str:
        return self.spec.settings["repo"]

    @property
    def path(self) -> str:
        return self.spec.settings["path"]

    @property
    def siblings(self) -> list[str]:
        return list(self.spec.settings.get("siblings", []))

    # ------------------------------------------------------------------------------------------ fetching
    def prepare(self) -> str:
        self._token = _github.token()
        self.secrets = [self._token] if self._token else []
        return "rest"

    def canonical(self, url: str) -> str:
        raw = raw_url()
        if url.startswith(raw + "/"):  # raw.githubusercontent.com/O/N/<commit>/<path> -> the blob URL
            owner, name, commit, path = url[len(raw) + 1:].split("/", 3)
            return f"{_github.GITHUB}/{owner}/{name}/blob/{commit}/{path}"
        return _github.rebase(url, _github.api_url(), _github.GITHUB_API)

    def fetch(self, http: PoliteSession, archive: Archive, transport: str) -> None:
        headers = {"Accept": "application/vnd.github+json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        url: str | None = (f"{_github.api_url()}/repos/{self.repo}/commits?path={quote(self.path)}"
                           f"&per_page={PER_PAGE}")
        commits: list[str] = []
        pages: set[str] = set()
        while url:
            # a listing whose next page is one already read, or that never ends, or that names a commit twice
            # would read for ever or read one version as two: the run fails, naming it
            if url in pages:
                raise PageFormatError(f"{self.repo}: the commits listing names the page {url} twice (a cycle)")
            if len(pages) == MAX_PAGES:
                raise PageFormatError(f"{self.repo}: the commits listing goes on beyond {MAX_PAGES} pages")
            pages.add(url)
            fetched = self._get(http, archive, url, headers)
            page = fetched.body if fetched.status != 304 else _cached_body(archive, self.canonical(url))
            for sha in (c["sha"] for c in _listing(page)):
                if sha in commits:
                    raise PageFormatError(f"{self.repo}: the commits listing names the commit {sha} twice")
                commits.append(sha)
            following = next_link(fetched.headers.get("link"), url)
            url = following if following and len(_listing(page)) == PER_PAGE else None
        if not commits:
            raise PageFormatError(f"{self.repo}: no commit changed {self.path} (is the path right?)")
        for commit in reversed(commits):  # oldest first: a run is cited where it first appears
            self._get(http, archive, f"{raw_url()}/{self.repo}/{commit}/{quote(self.path)}", {})
        for sibling in self.siblings:
            self._get(http, archive, f"{raw_url()}/{self.repo}/{commits[0]}/{quote(sibling)}", {})

    def _get(self, http: PoliteSession, archive: Archive, url: str, headers: dict) -> Fetched:
        cached = archive.cached(url)
        fetched = http.get(url, headers=headers, etag=cached and cached.etag,
                           last_modified=cached and cached.last_modified)
        archive.on_response(fetched)
        return fetched

    # ------------------------------------------------------------------------------------------ the seed
    def seed_responses(self, shared: Path) -> list[Fetched]:
        """The [seed] copies as the responses a refresh would have archived (file versions oldest first, then
        the siblings of the newest copy), each under the blob URL of its commit. Raises SeedError."""
        seed = self.spec.settings.get("seed")
        if not seed:
            raise SeedError(f"{self.spec.key}: its source file has no [seed] copies")
        retrieved = datetime.combine(date.fromisoformat(seed["retrieved_at"]), time(), timezone.utc)
        copies = seed["copies"]
        out = [self._copy(shared, c["file"], blob_url(self.repo, c["commit"], self.path), retrieved)
               for c in copies]
        newest = copies[-1]
        for sibling in self.siblings:
            listed = (newest.get("siblings") or {}).get(sibling)
            where = listed or _beside(PurePosixPath(newest["file"]), self.path, sibling)
            out.append(self._copy(shared, str(where), blob_url(self.repo, newest["commit"], sibling), retrieved))
        return out

    def _copy(self, shared: Path, relative: str, url: str, retrieved: datetime) -> Fetched:
        body, where = read_copy(shared, relative, self.spec.key)
        return Fetched(url=url, status=200, headers={"x-tpsdb-copy": str(where)}, body=body, retrieved_at=retrieved)

    # ------------------------------------------------------------------------------------------ reading
    def _versions(self, pages: list[bytes], transport: str) -> tuple[list[tuple[str, str | None]], int]:
        """(commit, date) of each version, oldest first, and the index of the first version page."""
        if transport == SEED:
            copies = (self.spec.settings.get("seed") or {}).get("copies") or []
            return [(c["commit"], c["date"]) for c in copies], 0
        commits: list[dict] = []
        index = 0
        while index < len(pages):
            page = _listing(pages[index])
            commits += page
            index += 1
            if len(page) < PER_PAGE:
                break
        return [(c["sha"], _commit_date(c)) for c in reversed(commits)], index

    def read(self, pages: list[bytes], transport: str) -> tuple[list[tuple[int, Post]], Completeness]:
        from tpsdb import readers

        versions, first = self._versions(pages, transport)
        expected = first + len(versions) + len(self.siblings)
        if len(pages) != expected:
            raise PageFormatError(f"{self.spec.key}: {len(pages)} pages for {len(versions)} versions and "
                                  f"{len(self.siblings)} siblings (expected {expected})")
        siblings = dict(zip(self.siblings, pages[first + len(versions):]))
        reader = readers.reader(self.spec.settings["format"])
        seen: set[str] = set()
        posts, self._candidates = [], {}
        for offset, (commit, day) in enumerate(versions):
            index = first + offset
            url = blob_url(self.repo, commit, self.path)
            ctx = readers.FileContext(url=url, path=self.path, retrieved_at="", published_at=day,
                                      siblings=siblings)
            try:
                found = reader.read(pages[index], ctx)
            except (ValueError, KeyError, TypeError) as error:  # a version the reader cannot read: the run fails
                raise PageFormatError(f"{url}: not a {reader.NAME} file ({type(error).__name__}: {error})") from None
            new = [c for c in found if c.slot not in seen]
            seen.update(c.slot for c in found)
            external_id = f"{self.path}@{commit}"
            self._candidates[external_id] = new
            earlier = " ".join(c for c, _ in versions[:offset])
            body = f"{_EARLIER} {earlier}\n" + pages[index].decode("utf-8", errors="replace")
            posts.append((index, Post(external_id=external_id, permalink=url, kind="file", parent_id=None,
                                      author=None, created_at=day, edited_at=None, minimized=False, deleted=False,
                                      body=body)))
        return posts, Completeness([Count("versions", len(versions), len(versions))])

    def candidates(self, post: Post, ctx: PostContext) -> list[Candidate]:
        out = self._candidates.get(post.external_id, [])
        for candidate in out:  # read before the retrieval date was known: it is the run's
            candidate.record["source"]["retrieved_at"] = ctx.retrieved_at
        return out


def _listing(page: bytes) -> list[dict]:
    try:
        commits = json.loads(page)
    except ValueError:
        raise PageFormatError("the commits listing is not JSON") from None
    if not isinstance(commits, list) or not all(isinstance(c, dict) and isinstance(c.get("sha"), str)
                                                and _COMMIT.match(c["sha"]) for c in commits):
        raise PageFormatError("the commits listing is not a list of commits with their sha")
    return commits


def _commit_date(commit: dict) -> str | None:
    """The commit's day (YYYY-MM-DD of commit.committer.date), or None when the listing does not state one (a
    member of another type, a date that is not one: the version is still read, its figures undated)."""
    inner = commit.get("commit")
    committer = inner.get("committer") if isinstance(inner, dict) else None
    stated = committer.get("date") if isinstance(committer, dict) else None
    try:
        return date.fromisoformat(stated[:10]).isoformat() if isinstance(stated, str) else None
    except ValueError:
        return None


def _cached_body(archive: Archive, url: str) -> bytes:
    cached = archive.cached(url)
    if cached is None:
        raise PageFormatError(f"{url}: 304 Not Modified for a page never fetched")
    return cached.body


def _beside(copy: PurePosixPath, path: str, sibling: str) -> PurePosixPath:
    """Where a sibling's copy sits: at the same place relative to the copy as in the repository (the copy's own
    path ends with the repository path: from the root above it; else from the copy's folder)."""
    parts = path.split("/")
    if copy.parts[-len(parts):] == tuple(parts):
        return copy.parents[len(parts) - 1] / sibling
    return copy.parent / posixpath.relpath(sibling, posixpath.dirname(path) or ".")


def _check_seed(seed) -> str | None:
    if seed is None:
        return None
    if not isinstance(seed, dict):
        return "seed: not a table"
    try:
        date.fromisoformat(seed.get("retrieved_at", ""))
    except (TypeError, ValueError):
        return "seed.retrieved_at: not a YYYY-MM-DD date"
    copies = seed.get("copies")
    if not isinstance(copies, list) or not copies:
        return "seed.copies: not a list of copies"
    for number, copy in enumerate(copies, 1):
        where = f"seed.copies[{number}]"
        if not isinstance(copy, dict):
            return f"{where}: not a table"
        if not isinstance(copy.get("file"), str) or not inside(copy["file"]):
            return f"{where}.file: not a path inside the shared folder"
        if not isinstance(copy.get("commit"), str) or not _COMMIT.match(copy["commit"]):
            return f"{where}.commit: not a 40-hex commit id"
        try:
            date.fromisoformat(copy.get("date", ""))
        except (TypeError, ValueError):
            return f"{where}.date: not a YYYY-MM-DD date"
        listed = copy.get("siblings", {})
        if not isinstance(listed, dict) or not all(isinstance(v, str) and inside(v) for v in listed.values()):
            return f"{where}.siblings: not a table of repo path = copy path inside the shared folder"
    return None
