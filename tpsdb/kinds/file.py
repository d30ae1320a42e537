"""`file`: one benchmark file at a URL (a raw file in a repository at a commit), refreshed conditionally and read
with the llama-bench result readers (tpsdb.collect.benchfiles: json, jsonl, csv, sql, or Markdown/text output).

Settings of the source file: `url` is the file's public address (each figure links to it); `fetch_url` where
its bytes are (default: `url`; for a file on GitHub, its raw.githubusercontent.com address); `hardware` the
machine, when the file does not name it as tpsdb names it; `format` when neither the name nor the content says it.
A header block as data/sources/ files have (`hardware: …` lines, then `---`) states the machine too.

A file states no count of its figures, so a read that cannot show the file is whole retires nothing and fails the
run: an empty answer, an HTML page (an error page served with 200), a text that ends mid-line or a JSON array never
closed (a cut download), and a file in which no result with a tokens/s figure is found (not the file at all)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from tpsdb.collect.benchfiles import FORMATS, extract_bench_file
from tpsdb.collect.completeness import Completeness
from tpsdb.collect.extract import Candidate, PostContext
from tpsdb.collect.github import PageFormatError
from tpsdb.kinds.base import OneFileKind, Post

_HEADER = re.compile(r"\A((?:[a-z_]+: [^\n]*\n)+)---\n")
# What an HTML page opens with (no llama-bench output does): a 200 answer that is a web page is an error page.
_HTML_START = re.compile(r"\A\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b", re.I | re.S)


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
        return [(0, post)], Completeness.of_file(self._not_whole(text))

    def _not_whole(self, text: str) -> str | None:
        """Why this text cannot be shown to be the whole file, or None."""
        if not text.strip():
            return "the answer is empty"
        if _HTML_START.match(text):
            return f"the answer is an HTML page, not the benchmark file (an error page?): {_opening(text)}"
        end = text.rstrip()[-1:]
        if self._format(text) == "json":
            if end not in ("]", "}"):
                return "the JSON file ends before its closing bracket (a cut download?)"
        elif not text.endswith("\n"):
            return ("the file ends mid-line, without a final newline (a cut download?); llama-bench ends every line "
                    "it writes")
        return None

    def _format(self, text: str) -> str:
        fmt = self.spec.settings.get("format")
        if fmt:
            return fmt
        suffix = urlsplit(self.fetch_url).path.rpartition(".")[2].lower()
        return suffix if suffix in FORMATS else "json" if text.lstrip().startswith("[") else "text"

    def candidates(self, post: Post, ctx: PostContext) -> list[Candidate]:
        found = self._candidates(post, ctx)
        if not any(isinstance(c.record.get("tokens_per_second"), (int, float)) for c in found):
            # Whatever the last run read stays: an answer with no result in it is not the file (an error message
            # served as text, a placeholder), and its absence of figures says nothing about the file's.
            raise PageFormatError(f"{self.fetch_url}: no benchmark result (a tokens/s figure) in the file: not the "
                                  f"file, or not one of {', '.join(FORMATS)}; beginning: {_opening(post.body)}")
        return found

    def _candidates(self, post: Post, ctx: PostContext) -> list[Candidate]:
        header = _HEADER.match(post.body)
        stated = dict(line.split(": ", 1) for line in header.group(1).splitlines()) if header else {}
        body = post.body[header.end():] if header else post.body
        hardware = self.spec.settings.get("hardware") or stated.get("hardware")
        suffix = urlsplit(self.fetch_url).path.rpartition(".")[2].lower()
        return extract_bench_file(body.encode(), self.spec.settings.get("format"), ctx, hardware, suffix=suffix)


def _opening(text: str) -> str:
    """The first characters of a text, on one line, to show in an error."""
    line = " ".join(text.split())[:60]
    return repr(line + ("..." if len(" ".join(text.split())) > 60 else ""))
