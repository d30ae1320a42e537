"""Every candidate the post readers give on the stored texts, as sorted JSON: a golden file for refactors.

Runs extraction (tpsdb.collect.extract, which calls the tool-output readers) over the texts the tests read
(tests/fixtures/threads/**: each post's Markdown and each GraphQL node's bodyHTML; tests/fixtures/github/**
thread.json and graphql pages) and, when present, ../shared/fixtures the same way and the notebook files of
../shared/datasets/xiongjiedai-* through their dataset reader (its cells hold `./main` run logs). Each candidate is
printed with every field of its record, its slot and its rejection reasons, keyed by the text it came from.
The tests' own inline texts are checked by the tests; as a further net, every string literal of tests/*.py that
holds a tool output's trigger words is read too (keyed by file and the text's hash, so that an edit elsewhere in
the test file moves no key). To print main's output on today's texts, put main's package first on the path:
`git worktree add /tmp/main-code main; PYTHONPATH=/tmp/main-code python scripts/golden_tools.py`.
Reads files and prints; writes nothing.

    python scripts/golden_tools.py > /tmp/before.json   # then, after a change: diff against a new run
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
from pathlib import Path

import tpsdb
from tpsdb.collect.extract import PostContext, extract_post, extract_text
from tpsdb.readers import FileContext, reader

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
CTX = PostContext("https://example.org/post", "2026-12-01", "2026-11-30", "someone", {})


def _dump(candidates) -> list[dict]:
    return [{"slot": c.slot, "reasons": list(c.reasons), "record": c.record} for c in candidates]


def _graphql_nodes(path: Path):
    """(id, bodyHTML) of every post of a GraphQL discussion page (opening post, comments, replies)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return
    discussion = (((data.get("data") or {}).get("repository") or {}).get("discussion")) if isinstance(data, dict) \
        else None
    if not isinstance(discussion, dict):
        return
    yield "op", discussion.get("bodyHTML") or ""
    for comment in (discussion.get("comments") or {}).get("nodes") or []:
        yield str(comment.get("databaseId")), comment.get("bodyHTML") or ""
        for reply in (comment.get("replies") or {}).get("nodes") or []:
            yield str(reply.get("databaseId")), reply.get("bodyHTML") or ""


def _texts(folder: Path, label: str, out: dict) -> None:
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*.md")):
        key = f"{label}/{path.relative_to(folder)}"
        out[key] = _dump(extract_text(path.read_text(encoding="utf-8"), CTX))
    for path in sorted(folder.rglob("*.json")):
        if path.name.endswith(".truth.json") or path.name == "routes.json":
            continue
        for post_id, body in _graphql_nodes(path):
            out[f"{label}/{path.relative_to(folder)}#{post_id}"] = _dump(extract_post(body, CTX))


def _notebooks(out: dict) -> None:
    for folder in sorted(SHARED.glob("datasets/xiongjiedai-*")):
        for path in sorted(folder.rglob("*.ipynb")):
            relative = str(path.relative_to(folder))
            ctx = FileContext(url=f"https://example.org/{relative}", path=relative, retrieved_at="2026-12-01")
            out[f"xiongjiedai/{relative}"] = _dump(reader("xiongjiedai").read(path.read_bytes(), ctx))


_TRIGGERS = ("tokens per second", "tokens/s", "tokens-per-sec", "throughput", "N_KV", "n_kv")


def _inline_texts(out: dict) -> None:
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    any(word in node.value for word in _TRIGGERS):
                key = f"tests/{path.name}#{hashlib.sha1(node.value.encode()).hexdigest()[:16]}"
                out[key] = _dump(extract_text(node.value, CTX))


def main() -> None:
    out: dict = {}
    _texts(ROOT / "tests" / "fixtures", "tests/fixtures", out)
    _texts(SHARED / "fixtures", "shared/fixtures", out)
    _notebooks(out)
    _inline_texts(out)
    json.dump(out, sys.stdout, sort_keys=True, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    counts = sum(len(v) for v in out.values())
    print(f"{len(out)} texts, {counts} candidates; package read from {Path(tpsdb.__file__).parent}", file=sys.stderr)


if __name__ == "__main__":
    main()
