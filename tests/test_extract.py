"""The extractor against the truth files of the three fixture threads, figure by figure.

Each `*.truth.json` lists every figure of one post and what a correct scraper does with it:
- accept: produced exactly once, passes the validator, and every field agrees with the truth;
- reject: produced exactly once, with the truth's lengths and names, but rejected (a missing field or a reason);
- ignore: never produced as a clean figure (and a figure quoted from another post is not produced at all).
Both transports are checked: the GraphQL bodyHTML (extract_post) and the post's Markdown (extract_text).
"""

from __future__ import annotations

import json
import re
import tomllib
from datetime import date
from pathlib import Path

import pytest

from tpsdb.collect.extract import COMPARE_TABLE, SUMMARY_TABLE, Candidate, PostContext, extract_post, extract_text
from tpsdb.collect.machines import canonical_hardware
from tpsdb.record import validate

ROOT = Path(__file__).resolve().parent.parent
THREADS = ROOT / "tests" / "fixtures" / "threads"
RETRIEVED = "2026-09-06"
THREAD_NUMBERS = ("4167", "15013", "16578")


# ------------------------------------------------------------------------------------------------ loading
def _graphql_posts(number: str) -> dict[str, dict]:
    """GraphQL nodes by post id: "op" for the opening post, else the comment's or reply's databaseId."""
    posts: dict[str, dict] = {}
    for page in sorted((THREADS / number / "graphql").glob("*.json")):
        discussion = json.loads(page.read_text(encoding="utf-8"))["data"]["repository"]["discussion"]
        posts["op"] = discussion
        for comment in discussion["comments"]["nodes"]:
            posts[str(comment["databaseId"])] = comment
            for reply in comment["replies"]["nodes"]:
                posts[str(reply["databaseId"])] = reply
    return posts


POSTS = {n: _graphql_posts(n) for n in THREAD_NUMBERS}
PROTOCOLS = {n: tomllib.loads((ROOT / "sources" / f"llamacpp-{n}.toml").read_text(encoding="utf-8"))["protocol"]
             for n in THREAD_NUMBERS}


def _post_id(path: Path) -> str:
    """"000-op" -> "op", "020-7654488" -> "7654488", "020-7654488.r1-7655199" -> "7655199"."""
    name = path.name.removesuffix(".truth.json").removesuffix(".md")
    if ".r" in name:
        return name.split(".r", 1)[1].split("-", 1)[1]
    return "op" if name.endswith("-op") else name.split("-", 1)[1]


def _context(number: str, node: dict) -> PostContext:
    return PostContext(permalink=node["url"], retrieved_at=RETRIEVED, published_at=node["createdAt"][:10],
                       author=(node.get("author") or {}).get("login"), protocol=PROTOCOLS[number])


def _markdown_body(path: Path) -> str:
    """The post's Markdown without the fixture's small header (author, dates, flags)."""
    return path.read_text(encoding="utf-8").split("\n---\n", 1)[1]


TRUTH_FILES = sorted(THREADS.glob("*/*.truth.json"))


def _case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name.removesuffix('.truth.json')}"


# ------------------------------------------------------------------------------------------------ matching
def _norm_quote(quote: str) -> str:
    return "|".join(" ".join(cell.split()) for cell in quote.split("|")).strip()


def _is_clean(candidate: Candidate) -> bool:
    """Would this figure be stored as a measurement? (no extractor reason, and the validator accepts it)"""
    return not candidate.reasons and validate(candidate.record, today=date.fromisoformat(RETRIEVED)).accepted


def _matches(candidate: Candidate, truth: dict) -> bool:
    record = candidate.record
    return (
        record["tokens_per_second"] is not None
        and abs(record["tokens_per_second"] - truth["tps"]) < 0.005
        and record["phase"] == truth["phase"]
        and (truth["quant"] is None or record["quantization"] == truth["quant"])
        and _norm_quote(record["source"]["quote"]) == _norm_quote(truth["quote"])
    )


def _expected_model(truth: dict, record: dict, protocol: dict) -> str | None:
    # The protocol alias names the model only when the row's parameter count is the protocol model's (a Mistral 7B
    # also prints "llama 7B"; the count itself is checked against the quote below) and when the model files the
    # post's command names, if any, look like the protocol's (CodeLlama 7B prints "llama 7B", 6.74 B too).
    aliases = {label.lower(): name for label, name in (protocol.get("model_aliases") or {}).items()}
    alias = aliases.get((truth["model"] or "").lower())
    files = re.findall(r"\s-m\s+(\S+)", record["nature"]["procedure"] or "")
    pattern = protocol.get("model_file_pattern")
    files_agree = not (pattern and files) or any(re.search(pattern, f, re.I) for f in files)
    same_model = record["model"]["params_b"] == protocol.get("params_b") and files_agree
    if truth["model"] and "?B" in truth["model"] and record["model"]["params_b"]:
        # issue 19: a "?B" label is no identity (gpt-oss 20B and 120B both print "gpt-oss ?B"): the row's
        # parameter count names it
        return truth["model"].replace("?B", f"{record['model']['params_b']:g}B params")
    return alias if alias and same_model else truth["model"]


def _params_in_quote(quote: str) -> float | None:
    match = re.search(r"\|\s*(\d+\.\d+) ([BM])\s*\|", quote)
    return None if not match else float(match[1]) if match[2] == "B" else round(float(match[1]) / 1000, 6)


def _field_errors(truth: dict, record: dict, protocol: dict) -> list[str]:
    lengths, users = record["lengths"], record["concurrency"]
    expected = {
        "prompt_tokens": (truth["prompt_tokens"], lengths["prompt_tokens"]),
        "generated_tokens": (truth["generated_tokens"], lengths["generated_tokens"]),
        "depth": (truth["depth"], lengths["context_depth"]),
        "users": (truth["users"], users["users"]),
        "figure": (truth["figure"], users["figure"]),
        "hardware": (canonical_hardware(truth["hardware"]) if truth["hardware"] else None, record["hardware"]["name"]),
        "model": (_expected_model(truth, record, protocol), record["model"]["name"]),
    }
    if _params_in_quote(truth["quote"]) is not None:
        expected["params_b"] = (_params_in_quote(truth["quote"]), record["model"]["params_b"])
    errors = [f"{name}: expected {want!r}, got {got!r}" for name, (want, got) in expected.items() if want != got]
    version = record["software"]["version"]
    if truth["version"] is None and version is not None:
        errors.append(f"version: expected none, got {version!r}")
    if truth["version"] is not None and truth["version"] not in (version or ""):
        errors.append(f"version: expected {truth['version']!r} in {version!r}")
    return errors


def check_post(candidates: list[Candidate], truths: list[dict], protocol: dict) -> list[str]:
    """Every disagreement between the candidates of one post and its truth file, as readable lines."""
    problems = []
    for truth in truths:
        label = f"{truth['expect']} {truth['tps']} {truth['phase']} ({truth['quote'][:70]})"
        found = [c for c in candidates if _matches(c, truth)]
        if truth["expect"] == "ignore":
            if truth["quote"].startswith(">"):  # quoted from another post: not a figure of this one at all
                found = [c for c in candidates if abs((c.record["tokens_per_second"] or 0) - truth["tps"]) < 0.005]
                problems += [f"{label}: quoted figure produced ({c.slot})" for c in found]
            else:
                problems += [f"{label}: produced as a clean figure ({c.slot})" for c in found if _is_clean(c)]
            continue
        if len(found) != 1:
            problems.append(f"{label}: produced {len(found)} times")
            continue
        candidate = found[0]
        problems += [f"{label}: {e}" for e in _field_errors(truth, candidate.record, protocol)]
        if truth["expect"] == "accept" and not _is_clean(candidate):
            outcome = validate(candidate.record, today=date.fromisoformat(RETRIEVED))
            problems.append(f"{label}: rejected: {candidate.reasons + outcome.reasons}")
        if truth["expect"] == "reject" and _is_clean(candidate):
            problems.append(f"{label}: accepted, should be rejected")
    return problems


# --------------------------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("truth_path", TRUTH_FILES, ids=_case_id)
def test_html_body_agrees_with_truth(truth_path: Path):
    number = truth_path.parent.name
    node = POSTS[number][_post_id(truth_path)]
    candidates = extract_post(node["bodyHTML"], _context(number, node))
    if node.get("deletedAt"):
        assert candidates == [], "a deleted post has no figures (its old figures are withdrawn by the refresh)"
        return
    truths = json.loads(truth_path.read_text(encoding="utf-8"))
    assert check_post(candidates, truths, PROTOCOLS[number]) == []


@pytest.mark.parametrize("truth_path", TRUTH_FILES, ids=_case_id)
def test_markdown_body_agrees_with_truth(truth_path: Path):
    number = truth_path.parent.name
    node = POSTS[number][_post_id(truth_path)]
    markdown = _markdown_body(truth_path.with_name(truth_path.name.replace(".truth.json", ".md")))
    candidates = extract_text(markdown, _context(number, node))
    truths = json.loads(truth_path.read_text(encoding="utf-8"))
    assert check_post(candidates, truths, PROTOCOLS[number]) == []


def test_the_truth_files_are_all_checked():
    # Guards the glob: if the fixtures moved, the parametrized tests above would silently test nothing.
    assert len(TRUTH_FILES) >= 50
    expects = {t["expect"] for path in TRUTH_FILES for t in json.loads(path.read_text(encoding="utf-8"))}
    assert expects == {"accept", "reject", "ignore"}


@pytest.mark.parametrize("number", THREAD_NUMBERS)
def test_posts_without_figures_give_none(number: str):
    with_truth = {_post_id(p) for p in TRUTH_FILES if p.parent.name == number}
    for post_id, node in POSTS[number].items():
        if post_id not in with_truth:
            assert extract_post(node["bodyHTML"], _context(number, node)) == [], post_id


@pytest.mark.parametrize("number", THREAD_NUMBERS)
def test_slots_are_unique_and_the_same_from_html_and_markdown(number: str):
    for md in sorted((THREADS / number).glob("*.md")):
        node = POSTS[number][_post_id(md)]
        if node.get("deletedAt"):
            continue
        ctx = _context(number, node)
        from_html = extract_post(node["bodyHTML"], ctx)
        from_markdown = extract_text(_markdown_body(md), ctx)
        slots = [c.slot for c in from_html]
        assert len(slots) == len(set(slots)), md.name
        assert {c.slot: c.record["tokens_per_second"] for c in from_html} == \
               {c.slot: c.record["tokens_per_second"] for c in from_markdown}, md.name


def test_the_page_transport_gives_the_same_figures_as_graphql():
    """The HTML page (td.comment-body, normalized) and GraphQL's bodyHTML are the same post to the extractor."""
    from tpsdb.collect.github import posts_from_html

    folder = ROOT / "tests" / "fixtures" / "github" / "ggml-org" / "llama.cpp" / "discussions" / "4167"
    if not folder.exists():
        pytest.skip("page fixtures not present")
    pages = [(folder / "page.html").read_bytes()] + [p.read_bytes() for p in sorted((folder / "pages").glob("*.html"))]
    for post in posts_from_html(pages, "ggml-org", "llama.cpp", 4167):
        node = POSTS["4167"][post.external_id]
        ctx = _context("4167", node)
        assert [c.record for c in extract_post(post.body_html, ctx)] == \
               [c.record for c in extract_post(node["bodyHTML"], ctx)], post.external_id


# ------------------------------------------------------------------------------------ shapes and edge cases
CTX = PostContext("https://github.com/ggml-org/llama.cpp/discussions/1#discussioncomment-2", RETRIEVED,
                  "2026-01-01", "someone", {})


@pytest.mark.parametrize("text", ["", "no figures here", "| a | b |\n|---|---|\n| 1 | 2 |", "<<<>>>|||", "| t/s |"])
def test_no_figures_no_crash(text):
    assert extract_text(text, CTX) == []
    assert extract_post(text, CTX) == []


def test_historical_llama_bench_shapes():
    text = """RTX 4090
| model                | size       | params  | backend | ngl | threads | n_ubatch | type_k | mmap | test           | t/s               |
| -------------------- | ---------: | ------: | ------- | --: | ------: | -------: | -----: | ---: | -------------: | ----------------: |
| LLaMA 7B mostly Q4_0 | 636.18 MiB | 68.03 M | CUDA    |  99 |       8 |      512 |   q8_0 |    0 | pp 512         |  1,003.34 ± 7.71  |
| llama 7B Q4_K - Medium |  3.56 GiB | 6.74 B | CUDA    |  99 |       8 |      512 |   q8_0 |    0 | pp512+tg128    |     244.87 ± 0.20 |
| llama 7B Q4_K - Medium |  3.56 GiB | 6.74 B | CUDA    |  99 |       8 |      512 |   q8_0 |    0 | tg32 @ d4096   |      77.36 ± 0.13 |

build: 2f68ce7cf (6918)
"""
    first, e2e, deep = (c.record for c in extract_text(text, CTX))
    assert first["tokens_per_second"] == 1003.34 and first["stddev"] == 7.71
    assert first["model"] == {"name": "LLaMA 7B", "params_b": 0.06803, "file_size_gb": 0.67}
    assert first["software"] == {"name": "llama.cpp", "version": "b6918 (2f68ce7cf)",
                                 "options": {"backend": "CUDA", "ngl": 99, "threads": 8, "n_ubatch": 512,
                                             "type_k": "q8_0", "mmap": 0}}
    assert first["hardware"]["name"] == "NVIDIA GeForce RTX 4090"
    assert (e2e["phase"], e2e["lengths"]) == ("end_to_end", {"prompt_tokens": 512, "generated_tokens": 128,
                                                             "context_depth": 0})
    assert e2e["quantization"] == "Q4_K_M" and e2e["model"]["file_size_gb"] == 3.82
    assert (deep["phase"], deep["lengths"]) == ("generation", {"prompt_tokens": 0, "generated_tokens": 32,
                                                               "context_depth": 4096})


def test_each_table_takes_its_own_build_line():
    text = """M2 Ultra
| model | size | params | backend | ngl | test | t/s |
| --- | ---: | ---: | --- | --: | ---: | ---: |
| llama 7B Q4_0 | 3.56 GiB | 6.74 B | Metal | 99 | tg128 | 94.27 ± 0.04 |

build: 8e672efe (1572)

Later, on a newer build:
| model | size | params | backend | ngl | test | t/s |
| --- | ---: | ---: | --- | --: | ---: | ---: |
| llama 7B Q4_0 | 3.56 GiB | 6.74 B | Metal | 99 | tg128 | 108.80 ± 0.10 |

build: c1d0e7a00 (6918)
"""
    old, new = (c.record["software"]["version"] for c in extract_text(text, CTX))
    assert (old, new) == ("b1572 (8e672efe)", "b6918 (c1d0e7a00)")


def test_quoted_lines_are_not_figures_of_the_quoting_post():
    text = "> | model | size | params | backend | test | t/s |\n> |---|---|---|---|---|---|\n" \
           "> | llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | tg128 | 188.96 ± 0.05 |\n\nsame here"
    assert extract_text(text, CTX) == []
    html = "<blockquote><table><tr><th>model</th><th>test</th><th>t/s</th></tr>" \
           "<tr><td>llama 7B Q4_0</td><td>tg128</td><td>188.96 ± 0.05</td></tr></table></blockquote><p>same</p>"
    assert extract_post(html, CTX) == []


def test_timing_logs_are_kept_as_rejections():
    text = ("llama_print_timings:        eval time =  3656,10 ms /    36 runs   "
            "(  101,56 ms per token,     9,85 tokens per second)")
    (candidate,) = extract_text(text, CTX)
    assert candidate.record["tokens_per_second"] == 9.85 and candidate.record["lengths"]["generated_tokens"] == 36
    assert candidate.reasons and candidate.reasons[0].startswith("nature.procedure:")  # no command shown (issue 10)


def test_compare_and_summary_tables_are_kept_with_a_reason():
    text = """| model | backend | test | t/s (Master) | t/s (PR) | Speedup |
|---|---|---|---:|---:|---:|
| LLaMA 7B mostly Q4_0 | Metal | tg 32 | 62.16 ± 0.07 | 62.57 ± 0.08 | 1.007 |

| test | t/s |
|---|---:|
| pp512 | 1,003.34 ± 7.71 |
"""
    master, pr, summary = extract_text(text, CTX)
    assert master.reasons == [COMPARE_TABLE.format("t/s (Master) vs t/s (PR)")]
    assert (pr.record["tokens_per_second"], pr.slot) == (62.57, "t0:r0:t/s (PR)")
    assert summary.reasons == [SUMMARY_TABLE] and summary.record["tokens_per_second"] == 1003.34


@pytest.mark.parametrize(("text", "name"), [
    ("M1 (7 GPU)", "Apple M1 (7-core GPU)"),
    ("On 30-core M2 Max:", "Apple M2 Max (30-core GPU)"),
    ("Mac Studio (M1 Ultra)", "Apple M1 Ultra"),
    ("Device 0: NVIDIA GeForce RTX 3090 Ti, compute capability 8.6, VMM: yes", "NVIDIA GeForce RTX 3090 Ti"),
    ("GeForce RTX 4070 Ti Super", "NVIDIA GeForce RTX 4070 Ti SUPER"),
    ("RTX PRO 6000 Blackwell", "NVIDIA RTX PRO 6000 Blackwell"),
    ("GB10", "NVIDIA DGX Spark"),
    ("|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |", "NVIDIA DGX Spark"),
    ("8x NVIDIA A100 80GB PCIe", "8x NVIDIA A100 80GB PCIe"),
    ("CMP 170HX (mining card)", "NVIDIA CMP 170HX"),
    ("ggml_vulkan: 0 = Radeon 8060S Graphics (AMD open-source driver) | uma: 1", "AMD Radeon 8060S"),
    ("RX 9070 XT on a Raspberry Pi 5, Vulkan.", "AMD Radeon RX 9070 XT"),
    # Names that do not say which chip ran the figures
    ("NVIDIA Graphics Device", None),
    ("AMD Radeon Graphics (RADV GFX1201)", None),
    ("Intel Core Ultra 265K Custom PC", None),
    ("Pi CM5 16GB", None),
    ("qwen3moe 30B.A3B Q4_K - Medium", None),
])
def test_canonical_hardware(text, name):
    assert canonical_hardware(text) == name


def test_device_lines_of_one_run_make_one_machine():
    text = """ggml_init_cublas: found 2 CUDA devices:
  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes
  Device 1: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes
| model | size | params | backend | ngl | test | t/s |
| --- | ---: | ---: | --- | --: | ---: | ---: |
| llama 70B Q4_K - Medium | 39.59 GiB | 70.55 B | CUDA | 99 | tg128 | 17.10 ± 0.01 |
"""
    (candidate,) = extract_text(text, CTX)
    assert candidate.record["hardware"]["name"] == "2x NVIDIA GeForce RTX 3090"


def test_two_runs_pasted_in_one_block_are_not_a_multi_gpu_machine():
    text = """```
Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes
build: 8e672efe (1572)
Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes
```
| model | size | params | backend | ngl | test | t/s |
| --- | ---: | ---: | --- | --: | ---: | ---: |
| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 99 | tg128 | 150.10 ± 0.01 |
"""
    (candidate,) = extract_text(text, CTX)
    assert candidate.record["hardware"]["name"] == "NVIDIA GeForce RTX 3090"


def test_batched_bench_borrows_the_model_of_its_section_only():
    batched = """main: n_kv_max = 4096, n_batch = 2048, n_ubatch = 512, flash_attn = 1, is_pp_shared = 0, n_gpu_layers = 9

|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|
|   512 |     32 |    4 |   2176 |    0.517 |  3965.01 |    0.843 |   151.90 |    1.359 |  1601.00 |
"""
    bench = """| model | size | params | backend | ngl | test | t/s |
| --- | ---: | ---: | --- | --: | ---: | ---: |
| gemma3 4B Q4_0 | 2.35 GiB | 3.88 B | CUDA | 99 | tg32 | 78.97 ± 0.15 |
"""
    prompt, generation, _ = extract_text(f"## gemma\n{batched}\n{bench}", CTX)
    assert (prompt.record["model"]["name"], prompt.record["quantization"]) == ("gemma3 4B", "Q4_0")
    assert generation.record["concurrency"] == {"users": 4, "figure": "aggregate"}
    assert generation.record["lengths"] == {"prompt_tokens": 0, "generated_tokens": 32, "context_depth": 512}
    assert generation.record["software"]["options"]["n_ubatch"] == 512 and prompt.record["software"]["options"]["ngl"] == 9
    prompt, _, _ = extract_text(f"## first\n{batched}\n## second\n{bench}", CTX)
    assert prompt.record["model"]["name"] is None
