"""Golden output of the extraction: every candidate figure of every fixture, printed as sorted JSON.

    python scripts/golden_extract.py > /tmp/before.json   # then change the extractor, run again, and diff

A change meant to make extraction faster must leave this output byte for byte the same. It reads, in place and
without the network: the page fixtures (tests/fixtures/github and ../shared/fixtures/github: pages -> posts ->
figures), the thread fixtures (each post's Markdown through extract_text, each GraphQL bodyHTML through
extract_post), the Markdown and notebook outputs of ../shared/datasets and ../shared/sources-extracts (the
XiongjieDai notebooks also through their dataset reader), the tool outputs the tests read, every string literal of
tests/*.py holding a tool output's trigger words (keyed by the text's hash, so an edit elsewhere in a test file moves
no key), and a fixed set of pseudo-random texts made of table and log pieces (the same every run), so that the
refusing paths are compared too. Inputs of ../shared that are absent are skipped. To print another checkout's
output on today's inputs, put its package first on the path: `PYTHONPATH=/tmp/other python scripts/golden_extract.py`.
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.append(str(ROOT))  # after PYTHONPATH: another checkout's package can be put first
sys.path.insert(0, str(ROOT / "tests"))

from tpsdb.collect.extract import Candidate, PostContext, extract_post, extract_text  # noqa: E402
from tpsdb.collect.github import posts_from_html_page  # noqa: E402
from tpsdb.readers import FileContext, reader  # noqa: E402

RETRIEVED = "2026-09-06"
PROTOCOLS = {p.stem.removeprefix("llamacpp-"): tomllib.loads(p.read_text(encoding="utf-8")).get("protocol", {})
             for p in sorted((ROOT / "sources").glob("llamacpp-*.toml"))}


def _ctx(number: str, permalink: str = "https://github.com/ggml-org/llama.cpp/discussions/1") -> PostContext:
    return PostContext(permalink, RETRIEVED, "2026-01-01", "someone", PROTOCOLS.get(number, {}))


def _dump(candidates: list[Candidate]) -> list[dict]:
    return [{"slot": c.slot, "reasons": c.reasons, "record": c.record} for c in candidates]


def _pages(out: dict) -> None:
    for base in (ROOT / "tests" / "fixtures" / "github", SHARED / "fixtures" / "github"):
        for thread in sorted(base.glob("*/*/discussions/*")):
            owner, repo, number = thread.parts[-4], thread.parts[-3], thread.name
            files = [(True, thread / "page.html")] + [(False, p) for p in sorted((thread / "pages").glob("*.html"))]
            for first, page in files:
                for post in posts_from_html_page(page.read_bytes(), owner, repo, int(number), first=first):
                    ctx = PostContext(post.permalink, RETRIEVED, None, post.author, PROTOCOLS.get(number, {}))
                    out[f"page:{page.relative_to(base)}:{post.external_id}"] = _dump(extract_post(post.body_html, ctx))


def _threads(out: dict) -> None:
    for base in (ROOT / "tests" / "fixtures" / "threads", SHARED / "fixtures" / "threads"):
        for md in sorted(base.glob("*/*.md")):
            text = md.read_text(encoding="utf-8")
            body = text.split("\n---\n", 1)[-1]
            out[f"md:{md.relative_to(base)}"] = _dump(extract_text(body, _ctx(md.parent.name)))
            out[f"html-as-text:{md.relative_to(base)}"] = _dump(extract_post(body, _ctx(md.parent.name)))
        for page in sorted(base.glob("*/graphql/*.json")):
            discussion = json.loads(page.read_text(encoding="utf-8"))["data"]["repository"]["discussion"]
            nodes = [discussion] + [n for c in discussion["comments"]["nodes"] for n in [c, *c["replies"]["nodes"]]]
            for node in nodes:
                ctx = _ctx(page.parent.parent.name, node["url"])
                out[f"graphql:{page.relative_to(base)}:{node['url']}"] = _dump(extract_post(node["bodyHTML"], ctx))


def _shared_texts(out: dict) -> None:
    for md in sorted([*(SHARED / "datasets").rglob("*.md"), *(SHARED / "sources-extracts").glob("*.md")]):
        out[f"shared-md:{md.relative_to(SHARED)}"] = _dump(extract_text(md.read_text(encoding="utf-8"), _ctx("")))
    for notebook in sorted((SHARED / "datasets").rglob("*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
        for k, cell in enumerate(cells):
            texts = [cell.get("source", [])] + [o.get("text", []) for o in cell.get("outputs", [])]
            text = "\n".join("".join(t) if isinstance(t, list) else str(t) for t in texts)
            if "t/s" in text or "tokens per second" in text:
                out[f"notebook:{notebook.relative_to(SHARED)}:{k}"] = _dump(extract_text(text, _ctx("")))
    tokatlas = SHARED / "peers" / "tokatlas" / "llamacpp_discussions.json"
    if tokatlas.exists():
        for k, record in enumerate(json.loads(tokatlas.read_text(encoding="utf-8"))["records"]):
            out[f"tokatlas:{k:05d}"] = _dump(extract_text(record.get("quote") or "", _ctx("4167")))


def _dataset_notebooks(out: dict) -> None:
    """The XiongjieDai notebooks through their dataset reader (their cells hold `./main` run logs)."""
    for folder in sorted(SHARED.glob("datasets/xiongjiedai-*")):
        for path in sorted(folder.rglob("*.ipynb")):
            relative = str(path.relative_to(folder))
            ctx = FileContext(url=f"https://example.org/{relative}", path=relative, retrieved_at="2026-12-01")
            out[f"xiongjiedai:{relative}"] = _dump(reader("xiongjiedai").read(path.read_bytes(), ctx))


_TRIGGERS = ("tokens per second", "tokens/s", "tokens-per-sec", "throughput", "N_KV", "n_kv")


def _inline_texts(out: dict) -> None:
    """Every string literal of the tests that holds a tool output's trigger words."""
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    any(word in node.value for word in _TRIGGERS):
                key = f"inline:tests/{path.name}#{hashlib.sha1(node.value.encode()).hexdigest()[:16]}"
                out[key] = _dump(extract_text(node.value, _ctx("")))


def _tool_outputs(out: dict) -> None:
    import test_tools  # the tool outputs the tests read (llama-cli, server, sweep-bench, ollama, mlx-lm, vLLM...)
    for name in ("LLAMA_CLI", "SERVER", "SWEEP", "OLLAMA", "MLX", "VLLM", "SGLANG"):
        text = getattr(test_tools, name)
        out[f"tool:{name}"] = _dump(extract_text(text, _ctx("")))
        out[f"tool-html:{name}"] = _dump(extract_post(text, _ctx("")))


_PIECES = ["|", " | ", "---", ":", "\n", " ", "±", "Â±", "t/s", "tokens/s", "tokens per second", "pp512", "tg128",
           "@ d4096", "1,003.34", "59.02", "0.17", "1e309", "9" * 40, "nan", "GiB", "B", "Q4_0", "llama 7B", "model",
           "test", "size", "params", "backend", "CUDA", "Metal", "PP", "TG", "N_KV", "S_PP t/s", "S_TG t/s",
           "eval rate:", "eval count:", "token(s)", "Prompt:", "Generation:", "tokens,", "ngl", "fa", "threads",
           "Output token throughput (tok/s):", "Maximum request concurrency:", "==========", "llama-bench -p 512",
           "llama-cli -m x.gguf", "ollama run x --verbose", "build: 2f68ce7cf (6918)", "RTX 4090", "M2 Ultra",
           "Device 0: NVIDIA GeForce RTX 4090, compute", "prompt eval time =", " ms / ", " runs (",
           " ms per token, ", "```", "> ", "# ", "## ", "<table>", "<tr><td>", "</td>", "<br>", "\t", "é"]


def _random_texts(out: dict) -> None:
    """Texts made of pieces of tables and logs, and real outputs with lines dropped or swapped: the same every run."""
    import test_tools
    real = [getattr(test_tools, n) for n in ("LLAMA_CLI", "SERVER", "SWEEP", "OLLAMA", "MLX", "VLLM", "SGLANG")]
    dgx = SHARED / "sources-extracts" / "llama.cpp-benches-dgx-spark.md"
    if dgx.exists():
        real.append(dgx.read_text(encoding="utf-8"))
    rng = random.Random(19)
    for k in range(400):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randrange(200)))
        out[f"random:{k:04d}"] = _dump(extract_text(text, _ctx("4167")))
    for k in range(300):
        lines = rng.choice(real).splitlines()
        for _ in range(rng.randrange(1, 6)):
            if not lines:
                break
            j = rng.randrange(len(lines))
            action = rng.randrange(3)
            if action == 0:
                del lines[j]
            elif action == 1:
                lines.insert(rng.randrange(len(lines) + 1), lines[j])
            else:
                lines[j] = lines[j].replace(rng.choice(["|", " ", ".", "t/s", "0", "1"]), rng.choice(_PIECES), 1)
        text = "\n".join(lines)
        out[f"mutated:{k:04d}"] = _dump(extract_text(text, _ctx("15013")))
        if k % 3 == 0:
            out[f"mutated-html:{k:04d}"] = _dump(extract_post(text, _ctx("15013")))


def main() -> None:
    out: dict = {}
    for part in (_pages, _threads, _shared_texts, _dataset_notebooks, _tool_outputs, _inline_texts, _random_texts):
        part(out)
    figures = sum(len(v) for v in out.values())
    json.dump(out, sys.stdout, sort_keys=True, indent=1, ensure_ascii=False, default=repr)
    sys.stdout.write("\n")
    print(f"{len(out)} inputs, {figures} candidate figures", file=sys.stderr)


if __name__ == "__main__":
    main()
