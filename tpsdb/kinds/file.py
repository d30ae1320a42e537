"""`file`: one benchmark file at a URL (a raw file in a repository at a commit), refreshed conditionally and read
with the llama-bench result readers (tpsdb.collect.benchfiles: json, jsonl, csv, sql, or Markdown/text output).

Settings of the source file: `url` is the file's public address (each figure links to it); `fetch_url` where
its bytes are (default: `url`; for a file on GitHub, its raw.githubusercontent.com address); `hardware` the
machine, when the file does not name it as tpsdb names it; `format` when neither the name nor the content says it.
A header block as data/sources/ files have (`hardware: …` lines, then `---`) states the machine too."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from tpsdb.collect.benchfiles import FORMATS, extract_bench_file
from tpsdb.collect.completeness import Completeness, Count
from tpsdb.collect.extract import Candidate, PostContext
from tpsdb.kinds.base import OneFileKind, Post

_HEADER = re.compile(r"\A((?:[a-z_]+: [^\n]*\n)+)---\n")


class BenchmarkFile(OneFileKind):
    name = "file"

    @classmethod
    def check(cls, spec) -> str | None:
        problem = super().check(spec)
        if problem:
            return problem
        fmt = spec.settings.get("format")
        if fmt is not None and fmt not in FORMATS:
            return f"format: {fmt!r} is not one of {', '.join(FORMATS)}"
        unknown = sorted(set(spec.settings) - {"fetch_url", "hardware", "format"})
        return f"{unknown[0]}: not a setting of the file kind" if unknown else None

    def read(self, pages: list[bytes], transport: str) -> tuple[list[tuple[int, Post]], Completeness]:
        text = pages[0].decode("utf-8-sig", errors="replace")
        post = Post(external_id="file", permalink=self.spec.url, kind="file", parent_id=None, author=None,
                    created_at=None, edited_at=None, minimized=False, deleted=False, body=text)
        return [(0, post)], Completeness([Count("files", 1, 1)])  # one file, always whole

    def candidates(self, post: Post, ctx: PostContext) -> list[Candidate]:
        header = _HEADER.match(post.body)
        stated = dict(line.split(": ", 1) for line in header.group(1).splitlines()) if header else {}
        body = post.body[header.end():] if header else post.body
        hardware = self.spec.settings.get("hardware") or stated.get("hardware")
        suffix = urlsplit(self.fetch_url).path.rpartition(".")[2].lower()
        return extract_bench_file(body.encode(), self.spec.settings.get("format"), ctx, hardware, suffix=suffix)
