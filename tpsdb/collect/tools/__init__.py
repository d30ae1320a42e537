"""Tool-output readers: one module per shape of text a benchmark tool prints into a post, a log or a notebook cell
(run logs, sweep-bench tables, `ollama run --verbose`, `mlx_lm.generate`, the serving benchmarks' summaries).

They live under tpsdb.collect, beside `extract` (the llama-bench tables, through tpsdb.collect.llamabench), because
they read the same thing: a post already cut into pieces, with its clues (tpsdb.collect.reading.Reading). The
dataset readers of tpsdb.readers read a whole file by its row schema instead; result files of the tools (JSON,
JSONL, CSV, SQL) are tpsdb.collect.benchfiles'. Syntax stays apart from shape: the pieces (text lines, Markdown
tables) come cut from reading.py; a module here reads only its tool's lines or columns.

A reader module here defines
    NAME: str                           its shape's name; its commands are filed under it (Post.run_command)
    SOFTWARE: tuple[str, ...]           the software its figures name (the first unless the post says otherwise)
    COMMANDS: tuple[str, ...]           regex alternatives of the commands that print the shape, as posts write
                                        them (linear: fixed words, possessive runs; "ollama\\s++run")
    COMMAND_WORDS: tuple[str, ...]      words one of which a text holding such a command holds (a cheap pre-test)
    OTHER_COMMANDS: tuple[(word, re.Pattern), ...]  commands the shared pattern cannot spell (llama.cpp's `main`),
                                        with groups `tool` and `args`, tried when no command of COMMANDS matched
    STATED_VERSIONS: dict[str, str]     how a post names the software before its version ("mlx-lm", lower case, a
                                        "-" also matching "_") -> the software
    def wants(text: str, reading: Reading) -> bool    whether the post's text may hold the shape (cheap)
    def read(post: Post) -> None                      adds each figure through post.add, in the text's order
A figure whose condition the text does not give is still added, with the field and the reason (Post.add names a
missing command); nothing is dropped silently. Readers are pure: no network, no database, no clock.

ORDER lists them; every module of the package must be in it (discovery checks both ways). The order is part of
the output: some slots count the candidates of the readers before (`ollama{n}`), so a new reader goes last.
Adding a tool = one module here, its tests (tests/test_tools.py), and its name at the end of ORDER.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from types import ModuleType

from tpsdb.collect.reading import Candidate, Reading
from tpsdb.collect.tools._post import CluePatterns, Post, quant_in_name, text_lines

__all__ = ["ORDER", "TOOLS", "quant_in_name", "tool_figures"]

ORDER = (
    "llama_logs",  # llama.cpp's llama_print_timings / llama_perf_context_print and llama-server's print_timing
    "ollama",  # ollama run --verbose
    "mlx",  # mlx_lm.generate
    "serving",  # vLLM / SGLang serving benchmark summaries
    "sweep_bench",  # ik_llama.cpp's llama-sweep-bench table
)

_CONTRACT = ("NAME", "SOFTWARE", "COMMANDS", "COMMAND_WORDS", "OTHER_COMMANDS", "STATED_VERSIONS", "wants", "read")


def _discover() -> tuple[ModuleType, ...]:
    """The reader modules in ORDER; an error names a module of the package missing from ORDER, a name of ORDER that
    is no module, or a module lacking part of the contract."""
    found = {info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")}
    if found != set(ORDER):
        raise RuntimeError(f"tpsdb.collect.tools.ORDER: modules not listed {sorted(found - set(ORDER))}, "
                           f"listed but absent {sorted(set(ORDER) - found)}")
    modules = tuple(importlib.import_module(f"{__name__}.{name}") for name in ORDER)
    for module in modules:
        missing = [name for name in _CONTRACT if not hasattr(module, name)]
        if missing:
            raise RuntimeError(f"{module.__name__}: a tool reader must define {', '.join(missing)}")
    names = [module.NAME for module in modules]
    if len(set(names)) != len(names):
        raise RuntimeError(f"tpsdb.collect.tools: two readers share a NAME ({names})")
    return modules


def _patterns(modules: tuple[ModuleType, ...]) -> CluePatterns:
    # group c<k>: the k-th reader's command names (which reader a match is for); `tool`: the name as written
    alternatives = "|".join(f"(?P<c{k}>{'|'.join(m.COMMANDS)})" for k, m in enumerate(modules) if m.COMMANDS)
    command = re.compile(rf"(?<![\w-])(?P<tool>{alternatives})(?:\.exe)?(?P<args>\s.*+)?$")
    stated = {spelled: software for m in modules for spelled, software in m.STATED_VERSIONS.items()}
    spellings = "|".join(re.escape(spelled).replace(r"\-", "[-_]") for spelled in stated)
    version = re.compile(
        rf"(?<![\w.-])(?P<tool>{spellings})(?:\s*+(?:==|version(?:\s++is)?:?|v|:))?\s*+v?"
        r"(?P<version>\d{1,4}\.\d{1,4}(?:\.\d{1,4})?(?:\.?(?:post|rc|dev)\d{1,4})?)(?![\w.])", re.I)
    return CluePatterns(
        command=command,
        groups=tuple(m.NAME for m in modules if m.COMMANDS),
        command_words=tuple(dict.fromkeys(word for m in modules for word in m.COMMAND_WORDS)),
        other_commands=tuple((word, pattern, m.NAME) for m in modules for word, pattern in m.OTHER_COMMANDS),
        version=version, version_software=stated,
        # the name's first word: "mlx" is in every spelling of mlx-lm / mlx_lm
        version_words=tuple(dict.fromkeys(spelled.split("-")[0] for spelled in stated)))


TOOLS = _discover()
PATTERNS = _patterns(TOOLS)  # a tuple of patterns in the globals: tests/test_linear_time.py times each one


def tool_figures(reading: Reading, tools: tuple[ModuleType, ...] | None = None) -> list[Candidate]:
    """Every figure the post's text prints in the shape of a reader of ORDER (llama-bench tables are read apart);
    `tools`, other reader modules in their order (a test's tool before it has its module here)."""
    patterns = PATTERNS if tools is None else _patterns(tools)
    text = "\n".join(line for _, line in text_lines(reading))
    wanted = [module for module in (TOOLS if tools is None else tools) if module.wants(text, reading)]
    if not wanted:
        return []
    post = Post(reading, patterns)
    for module in wanted:
        module.read(post)
    return post.out
