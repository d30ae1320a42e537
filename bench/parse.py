"""Benchmark: parse throughput of the discussion pages (posts + figures), next to a plain lxml.html parse.

    python bench/parse.py [ROUNDS]

Reads the fixture pages of the three threads (tests/fixtures/github), no network. Reports MB of HTML per second
and posts per second for `lxml.html.fromstring` alone (the reference), for tpsdb's HTML parse (each page into its
posts) and for tpsdb's whole path (posts, then every figure of every post). Target (issue 3): at least half of
the reference speed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import lxml.html

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tpsdb.collect.extract import PostContext, extract_post  # noqa: E402
from tpsdb.collect.github import posts_from_html_page  # noqa: E402
from tpsdb.kinds import load_sources  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "github" / "ggml-org" / "llama.cpp" / "discussions"


def pages() -> list[tuple[int, bool, bytes]]:
    out = []
    for thread in sorted(FIXTURES.iterdir()):
        number = int(thread.name)
        out.append((number, True, (thread / "page.html").read_bytes()))
        for page in sorted((thread / "pages").glob("*.html")) if (thread / "pages").exists() else []:
            out.append((number, False, page.read_bytes()))
    return out


def tpsdb_parse(items, protocols) -> tuple[int, int]:
    comments = figures = 0
    for number, first, body in items:
        for post in posts_from_html_page(body, "ggml-org", "llama.cpp", number, first=first):
            comments += 1
            ctx = PostContext(post.permalink, "2026-09-06", None, post.author, protocols.get(number, {}))
            figures += len(extract_post(post.body_html, ctx))
    return comments, figures


def tpsdb_posts(items) -> None:
    """The HTML parse proper: every page into its posts (author, dates, flags, body), no figure extraction."""
    for number, first, body in items:
        posts_from_html_page(body, "ggml-org", "llama.cpp", number, first=first)


def reference_parse(items) -> None:
    for _, _, body in items:
        lxml.html.fromstring(body)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    items = pages()
    # The discussions' protocols, by number: other kinds of source (a `file`, a peer's data) have no page here.
    protocols = {int(s.url.rsplit("/", 1)[1]): s.protocol for s in load_sources().values()
                 if s.kind == "github_discussion"}
    megabytes = sum(len(body) for _, _, body in items) / 1e6
    works = {"lxml.html.fromstring (reference)": lambda: reference_parse(items),
             "tpsdb pages -> posts": lambda: tpsdb_posts(items),
             "tpsdb pages -> posts -> figures": lambda: tpsdb_parse(items, protocols)}
    for work in works.values():
        work()  # warm-up
    # The two are timed in turns, round after round, not one after the other: the machine's speed drifts (shared
    # cores), and timing all of one before all of the other would fold that drift into their ratio.
    # Both clocks: the wall clock (what a user waits), and the process's CPU time, which a machine shared with other
    # work inflates much less (a round the scheduler paused is not counted as parsing).
    results = dict.fromkeys(works, float("inf"))
    cpu = dict.fromkeys(works, float("inf"))
    for _ in range(rounds):
        for label, work in works.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            work()
            results[label] = min(results[label], time.perf_counter() - start)
            cpu[label] = min(cpu[label], time.process_time() - start_cpu)
    comments, figures = tpsdb_parse(items, protocols)
    print(f"{len(items)} pages, {megabytes:.2f} MB of HTML, {comments} posts, {figures} candidate figures; "
          f"best of {rounds} rounds")
    for label, seconds in results.items():
        print(f"{label:34s} {seconds * 1000:8.1f} ms  {megabytes / seconds:7.2f} MB/s  {comments / seconds:8.0f} posts/s")
    reference = results["lxml.html.fromstring (reference)"]
    for label in ("tpsdb pages -> posts", "tpsdb pages -> posts -> figures"):
        print(f"{label} speed / reference speed: {reference / results[label]:.2f} (target >= 0.50)")
    reference_cpu = cpu["lxml.html.fromstring (reference)"]
    for label in ("tpsdb pages -> posts", "tpsdb pages -> posts -> figures"):
        print(f"{label} speed / reference speed, CPU time: {reference_cpu / cpu[label]:.2f} "
              f"({cpu[label] * 1000:.1f} ms vs {reference_cpu * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
