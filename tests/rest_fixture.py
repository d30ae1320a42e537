"""A pull request for the REST tests, made of the Markdown posts of the 16578 fixture thread: its opening post is
the pull request's body, its comments (replies left out: an issue has none) are the comments, with the ids,
authors and dates the thread gives. Expected figures come from the same posts' truth files."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ROOT

THREAD = ROOT / "tests" / "fixtures" / "threads" / "16578"
OWNER, REPO, NUMBER = "ggml-org", "llama.cpp", 4766
PR_URL = f"https://github.com/{OWNER}/{REPO}/pull/{NUMBER}"
SOURCE_FILE = f"""key = "llamacpp-pr-{NUMBER}"
title = "A pull request rich in figures"
url = "{PR_URL}"
kind = "github_issue"
refresh_interval_hours = 24
"""


def _post(path: Path) -> tuple[dict, str]:
    head, _, body = path.read_text(encoding="utf-8").partition("\n---\n")
    fields = dict(line.split(": ", 1) for line in head.splitlines())
    return fields, body


def comment(comment_id: int, body: str, *, author: str = "someone", created: str = "2025-10-20T10:00:00Z",
            updated: str | None = None) -> dict:
    """A comment as GitHub's REST API gives it (the fields tpsdb reads, and a few it does not)."""
    return {"id": comment_id, "node_id": f"IC_{comment_id}", "url": f"https://api.github.com/repos/{OWNER}/{REPO}/"
            f"issues/comments/{comment_id}", "html_url": f"{PR_URL}#issuecomment-{comment_id}",
            "issue_url": f"https://api.github.com/repos/{OWNER}/{REPO}/issues/{NUMBER}",
            "user": {"login": author, "id": 1, "type": "User"}, "created_at": created, "updated_at": updated or created,
            "author_association": "CONTRIBUTOR", "body": body}


def pull_request() -> tuple[dict, list[dict]]:
    """(the issue answer, the comments) of the fixture pull request."""
    fields, body = _post(THREAD / "000-op.md")
    issue = {"id": 1, "number": NUMBER, "title": "A pull request rich in figures", "state": "closed",
             "html_url": PR_URL, "user": {"login": fields["author"]}, "created_at": fields["created_at"],
             "updated_at": "2025-11-01T00:00:00Z", "body": body,
             "pull_request": {"url": f"https://api.github.com/repos/{OWNER}/{REPO}/pulls/{NUMBER}",
                              "html_url": PR_URL}}
    comments = []
    for path in sorted(THREAD.glob("*.md")):
        if path.name.startswith("000-") or ".r1-" in path.name:
            continue
        fields, body = _post(path)
        comments.append(comment(int(path.stem.split("-", 1)[1]), body, author=fields["author"],
                                created=fields["created_at"]))
    return issue, comments


def expected_figures() -> list[tuple[str, float]]:
    """(permalink, t/s) of every figure the truth files accept, sorted."""
    found = []
    for truth in sorted(THREAD.glob("*.truth.json")):
        stem = truth.name.removesuffix(".truth.json")
        if ".r1-" in stem:
            continue
        link = PR_URL if stem.startswith("000-") else f"{PR_URL}#issuecomment-{stem.split('-', 1)[1]}"
        found += [(link, entry["tps"]) for entry in json.loads(truth.read_text(encoding="utf-8"))
                  if entry["expect"] == "accept"]
    return sorted(found)
