"""What llama-bench and llama-batched-bench print, read back: tables, cells, build lines, commands, logs.

Pure functions of strings. Every historical shape of the markdown printer is accepted: `pp 512` (2023),
`pp512`, `pp512+tg128` (-pg), `tg32 @ d4096` (-d), model labels with and without `mostly`, sizes in MiB or GiB,
parameters in M or B, values with thousands separators. See llama.cpp tools/llama-bench/llama-bench.cpp.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tpsdb import units
from tpsdb.memo import short_text_memo
from tpsdb.units import GIB_IN_GB, MIB_IN_GB  # noqa: F401  re-exported: the units llama-bench prints

# ------------------------------------------------------------------------------------------- table shapes
LLAMA_BENCH = "llama-bench"
BATCHED_BENCH = "llama-batched-bench"
COMPARE = "compare"  # master vs PR, branch vs branch: two t/s columns and a speedup
SUMMARY = "summary"  # test and t/s columns but no model column: typed by hand, conditions unknown
SCOREBOARD = "scoreboard"  # the 4167 opening post: one row per chip, one column per format and phase

_SCOREBOARD_COLUMN = re.compile(r"^(?P<quant>\S+)\s+(?P<phase>PP|TG)\s*\[t/s\]$", re.I)


def table_kind(header: list[str]) -> str | None:
    """Which printer (or which hand) made a table with this header; None for tables that hold no speed figure."""
    return _table_kind(tuple(header))


@short_text_memo  # a thread repeats a few header shapes in post after post
def _table_kind(header: tuple[str, ...]) -> str | None:
    names = [h.strip().lower() for h in header]
    ts_columns = [n for n in names if "t/s" in n]
    if {"pp", "tg", "b"} <= set(names) and any("s_tg" in n for n in names):
        return BATCHED_BENCH
    if "chip" in names and any(_SCOREBOARD_COLUMN.match(h.strip()) for h in header):
        return SCOREBOARD
    if len(ts_columns) >= 2 or "speedup" in names:
        return COMPARE if "test" in names else None
    if "test" in names and "t/s" in names:
        return LLAMA_BENCH if "model" in names else SUMMARY
    return None


def scoreboard_column(header_cell: str) -> tuple[str, str] | None:
    """("Q8_0", "prompt") for a scoreboard column "Q8_0 PP [t/s]"."""
    match = _SCOREBOARD_COLUMN.match(header_cell.strip())
    if not match:
        return None
    return normalize_quant(match["quant"]), "prompt" if match["phase"].upper() == "PP" else "generation"


# ------------------------------------------------------------------------------------------------- cells
# Every pattern of the collectors runs in linear time on any line a post can hold (tests/test_linear_time.py):
# a run of characters two parts of a pattern could both take is given to one of them by a possessive quantifier
# (`*+`, `++`), and a search tries a run once, from its start (a look-behind), not from each of its characters.
_VALUE = re.compile(r"^\s*+(?P<avg>\d[\d,]*+(?:\.\d+)?)\s*+(?:(?:±|\+/-|\+-)\s*+(?P<sd>\d[\d,]*+(?:\.\d+)?))?\s*$")


def parse_value(cell: str) -> tuple[float, float | None] | None:
    """(mean, stddev) from "1,003.34 ± 7.71" or "4184.85"; None when the cell is not a number."""
    if "Â" in cell:  # "±" read as Latin-1 once (Â±) or twice (Ã‚Â±) on its way to the post
        cell = cell.replace("Ã‚Â±", "±").replace("Â±", "±")
    match = _VALUE.match(cell)
    if not match:
        return None
    avg, sd = match.group(1, 2)  # thousands separators only: llama-bench prints "%.2f"
    return (float(avg.replace(",", "") if "," in avg else avg),
            (float(sd.replace(",", "") if "," in sd else sd) if sd else None))


@dataclass(frozen=True)
class TestShape:
    """The lengths of one llama-bench test: `pp512`, `tg128`, `pp512+tg128`, `tg32 @ d4096`."""

    phase: str
    prompt_tokens: int
    generated_tokens: int
    context_depth: int


# Counts of at most 18 digits: what a 64-bit integer column holds (and int() reads any of them).
_TEST = re.compile(r"^(?P<kind>pp|tg)\s*(?P<n>\d{1,18})(?:\s*\+\s*tg\s*(?P<tg>\d{1,18}))?"
                   r"(?:\s*@\s*d\s*(?P<depth>\d{1,18}))?$", re.I)


@short_text_memo
def parse_test(label: str) -> TestShape | None:
    match = _TEST.match(label.strip())
    if not match:
        return None
    n, depth = int(match["n"]), int(match["depth"] or 0)
    if match["tg"]:
        return TestShape("end_to_end", n, int(match["tg"]), depth)
    if match["kind"].lower() == "pp":
        return TestShape("prompt", n, 0, depth)
    return TestShape("generation", 0, n, depth)




def parse_size_gb(cell: str) -> float | None:
    """Decimal GB from llama-bench's "3.56 GiB" / "636.18 MiB" (binary units, as the printer uses): tpsdb.units."""
    return units.size_gb(cell)


def parse_params_b(cell: str) -> float | None:
    """Billions of parameters from "6.74 B" or "68.03 M": tpsdb.units."""
    return units.params_b(cell)


# llama.cpp's ftype names (llama_model_ftype_name) -> the format name without decorations.
_K_SIZES = {"small": "S", "medium": "M", "large": "L"}
_QUANT_TOKEN = re.compile(r"^(?:I?Q\d\w*|TQ\d_\d|F16|F32|F64|BF16|MXFP4|NVFP4|FP8|I8|I16|I32|I64|\?)$", re.I)
_QUANT_PREFIX = re.compile(r"^(mostly|all)\s+", re.I)
_QUANT_SOME = re.compile(r",\s*some\s+\w+$", re.I)
_QUANT_MOE = re.compile(r"(?<!\s)\s+MoE$", re.I)
_QUANT_IQ3_MIX = re.compile(r"^IQ3_S mix\b", re.I)
_QUANT_K_SIZE = re.compile(r"^(Q\d_K)\s*-\s*(Small|Medium|Large)$", re.I)
_QUANT_BPW = re.compile(r"(?<!\s)\s*-\s*[\d.]+\s*bpw.*$", re.I)


def normalize_quant(ftype: str) -> str | None:
    """The format name from llama.cpp's file type name.

    "Q4_K - Medium" -> "Q4_K_M", "mostly Q4_0" -> "Q4_0", "MXFP4 MoE" -> "MXFP4", "IQ3_S mix - 3.66 bpw" -> "IQ3_M".
    """
    text = " ".join(ftype.split())
    text = _QUANT_PREFIX.sub("", text)
    text = _QUANT_SOME.sub("", text)  # "Q4_1, some F16" (2023 labels)
    text = _QUANT_MOE.sub("", text)
    if _QUANT_IQ3_MIX.match(text):
        return "IQ3_M"
    k_size = _QUANT_K_SIZE.match(text)
    if k_size:
        base, size = k_size[1].upper(), _K_SIZES[k_size[2].lower()]
        return base if base == "Q2_K" and size == "M" else f"{base}_{size}"  # plain Q2_K prints as "Q2_K - Medium"
    text = _QUANT_BPW.sub("", text)  # "IQ4_XS - 4.25 bpw", "TQ1_0 - 1.69 bpw ternary"
    return text.upper() if text and _QUANT_TOKEN.match(text) and text != "?" else None


_SIZE_TOKEN = re.compile(r"^(?:\?|\d+(?:\.\d+)?(?:x\d+(?:\.\d+)?)?)[BMK](?:\.A\d+(?:\.\d+)?[BM])?$")


@short_text_memo
def split_model_label(label: str) -> tuple[str | None, str | None]:
    """("gpt-oss 120B", "MXFP4") from llama-bench's model column "gpt-oss 120B MXFP4 MoE".

    The column is the model's type label (architecture and size) followed by its file type name.
    """
    tokens = label.split()
    for i, token in enumerate(tokens):
        if _SIZE_TOKEN.match(token) and i > 0:
            name, ftype = " ".join(tokens[: i + 1]), " ".join(tokens[i + 1:])
            return name, normalize_quant(ftype) if ftype else None
    return (label.strip() or None), None


# --------------------------------------------------------------------------------------------- build lines
_BUILD_PATTERNS = [
    # llama-bench footer "build: 2f68ce7cf (6918)", also "llama.cpp build e9fd8dc (7825)"
    re.compile(r"\bbuild:?\s+(?P<commit>[0-9a-f]{6,40})\s*\((?P<number>\d+)\)"),
    # "build b6767 (5acd45546)"
    re.compile(r"\bbuild:?\s+b(?P<number>\d{3,5})\s*\((?P<commit>[0-9a-f]{6,40})\)"),
    # llama-cli --version: "version: 6918 (2f68ce7cf)"
    re.compile(r"\bversion:\s*(?P<number>\d{3,5})\s*\((?P<commit>[0-9a-f]{6,40})\)"),
    re.compile(r"\bbuild:?\s+b(?P<number>\d{3,5})\b"),
    re.compile(r"\bllama\.cpp\s+b(?P<number>\d{3,5})\b"),
    # a benchmark run after "git checkout 8e672efe" ran that commit
    re.compile(r"\bgit\s+checkout\s+(?P<commit>[0-9a-f]{7,40})\b"),
]


# Versions a post states in passing (weaker than a build line: used when no build line gives the table's version).
_STATED_PATTERNS = [
    re.compile(r"\bcommit:?\s++(?P<commit>[0-9a-f]{7,40})\b"),
    re.compile(r"\bbuild\s++(?P<number>\d{3,5})\b"),
    re.compile(r"\b(?:release|tag|version)\s++b(?P<number>\d{4,5})\b"),
    # the path or archive of a release binary: "llama-b7739-bin-win-cuda-x64\llama-bench.exe", "llama.cpp-b7739/"
    re.compile(r"(?<![\w.-])llama(?:\.cpp)?-b(?P<number>\d{4,5})(?![\d])"),
]
_HEADING_BUILD = re.compile(r"^\s*+(?:llama\.cpp\s++)?b(?P<number>\d{4,5})\b")


def may_state_version(text: str) -> bool:
    """Whether a text holds a word some stated-version pattern needs."""
    return "commit" in text or "build" in text or "llama-b" in text or "llama.cpp-b" in text or "release" in text \
        or "tag" in text or "version" in text


def parse_stated_version(line: str, heading: bool = False) -> str | None:
    """A version stated in passing on a line ("commit 3bdc4cd0", "build 7739", a heading "b7739", a release
    binary's path), or None."""
    if heading:
        match = _HEADING_BUILD.match(line)
        if match:
            return format_version(match["number"], None)
    return _first_version(_STATED_PATTERNS, line) if may_state_version(line) else None


def parse_stated_versions(line: str, heading: bool = False) -> list[str]:
    """Every version a line states in passing ("commit 1d0125bc and then commit 2df5bcf3": two)."""
    first = parse_stated_version(line, heading)
    if first is None:
        return []
    found = dict.fromkeys([first])
    for pattern in _STATED_PATTERNS:
        for match in pattern.finditer(line):
            groups = match.groupdict()
            version = format_version(groups.get("number"), groups.get("commit"))
            if version:
                found.setdefault(version)
    return list(found)


def format_version(number: int | str | None, commit: str | None) -> str | None:
    """The canonical version: "b6918 (2f68ce7cf)", "b6918", or "8e672efe"."""
    number = int(number) if number not in (None, "") else None
    commit = commit if commit and commit != "unknown" else None
    if number and number > 0:
        return f"b{number} ({commit})" if commit else f"b{number}"
    return commit


def may_state_build(text: str) -> bool:
    """Whether a text holds a word that some build pattern needs (most text holds none)."""
    return "build" in text or "version:" in text or "llama.cpp" in text or "checkout" in text


def parse_build(line: str) -> str | None:
    """The llama.cpp version a line states, or None."""
    return _first_version(_BUILD_PATTERNS, line) if may_state_build(line) else None


def _first_version(patterns: list[re.Pattern], line: str) -> str | None:
    """The version the first of the patterns that matches the line reads (its number and/or commit groups)."""
    for pattern in patterns:
        match = pattern.search(line)
        if match:
            groups = match.groupdict()
            return format_version(groups.get("number"), groups.get("commit"))
    return None


# ------------------------------------------------------------------------------------------------- forks
# A line that is only a fork's name labels the output below it ("### ik_llama.cpp", "<summary>llama.cpp</summary>",
# "**mainline**:"): a post comparing forks says so, and a figure takes the fork of its own label (issue 19).
_FORK_NAMES = {"ik_llama.cpp": "ik_llama.cpp", "ik_llama": "ik_llama.cpp", "llama.cpp": "llama.cpp",
               "mainline": "llama.cpp", "mainline llama.cpp": "llama.cpp", "llama.cpp mainline": "llama.cpp"}
_FORK_NOTE = re.compile(r"(?<!\s)\s*+\((?:CPU|CUDA|Vulkan|ROCm|Metal|main|mainline)\)$", re.I)  # "llama.cpp (CUDA)"


def fork_label(line: str) -> str | None:
    """"ik_llama.cpp" or "llama.cpp" when a short line names only that fork, else None."""
    if len(line) > 80 or ("llama" not in line and "ainline" not in line):
        return None
    text = line.replace("<summary>", "").replace("</summary>", "") if "<" in line else line
    text = text.strip(" \t#*_>`:-/")
    if text.endswith(")"):
        text = _FORK_NOTE.sub("", text)
    return _FORK_NAMES.get(text.lower())


# ---------------------------------------------------------------------------------------------- CPU-only runs
# What a run prints or is given when it finds no GPU: ggml-cuda's "ggml_cuda_init: failed to initialize CUDA: no
# CUDA-capable device is detected" (and before 2024 "ggml_init_cublas: no CUDA devices found, CUDA will be
# disabled"), an empty or -1 CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES, `-dev none`. Such a run is the CPU's,
# whatever the backend column of a build with CUDA says.
_CPU_ONLY = re.compile(
    r"failed to initialize (?:CUDA|ROCm|HIP)\b|no (?:CUDA|ROCm) devices found|CUDA will be disabled"
    r"|(?<![\w-])(?:CUDA|HIP|ROCR)_VISIBLE_DEVICES=(?:\"\"|''|-1)?(?=\s|$)|(?<![\w-])(?:-dev|--device)\s++none\b")


_VISIBLE = re.compile(r"(?<![\w-])(?:CUDA|HIP|ROCR)_VISIBLE_DEVICES=[\"']?+(?P<list>\d{1,2}(?:,\d{1,2}){0,15})[\"']?+(?!\S)")


def visible_devices(line: str) -> tuple[int, ...] | None:
    """(0, 1) from `CUDA_VISIBLE_DEVICES=0,1 ./llama-bench …`: the GPUs a run could see; None when not set."""
    if "VISIBLE_DEVICES=" not in line:
        return None
    match = _VISIBLE.search(line)
    return tuple(int(k) for k in match["list"].split(",")) if match else None


def may_say_cpu_only(text: str) -> bool:
    """Whether a text holds a word every CPU-only sign needs."""
    return "VISIBLE_DEVICES" in text or "initialize" in text or "devices found" in text or " none" in text


def says_cpu_only(line: str) -> bool:
    """Whether a line says the run it belongs to found or was given no GPU."""
    return may_say_cpu_only(line) and _CPU_ONLY.search(line) is not None


# ------------------------------------------------------------------------------------------------ commands
_COMMAND = re.compile(r"(?P<tool>llama-batched-bench|llama-bench)(?:\.exe)?(?P<args>(?:\s+-\S.*)?)$")  # Windows: .exe
_REDIRECTION = re.compile(r"(?<!\s)\s+\d?>\s*\S+")  # from the start of a blank run only
_CONTINUATION = re.compile(r"\\\s*\n\s*")


def parse_command(line: str) -> tuple[str, str] | None:
    """(tool, "llama-bench -p 512 -n 128 -ngl 99") from a shell line running the tool with arguments."""
    if "llama-b" not in line:  # both tools' names start so
        return None
    match = None
    for match in _COMMAND.finditer(line):  # the last one: "make llama-bench && ./llama-bench -p 512"
        pass
    if not match or not match["args"].strip():
        return None
    args = _REDIRECTION.sub("", match["args"])  # shell redirections are not options
    return match["tool"], f"{match['tool']} {' '.join(args.split())}"


def join_continuations(text: str) -> str:
    """Shell lines continued with a backslash, joined (the 4167 command spans five lines)."""
    return _CONTINUATION.sub(" ", text) if "\\" in text else text


# --------------------------------------------------------------------------------------- llama-bench options
# llama-bench column (markdown display name or JSON field) -> the option key stored in software.options
OPTION_KEYS = {
    "backend": "backend", "backends": "backend",
    "ngl": "ngl", "n_gpu_layers": "ngl",
    "threads": "threads", "n_threads": "threads",
    "n_batch": "n_batch", "n_ubatch": "n_ubatch",
    "type_k": "type_k", "type_v": "type_v",
    "fa": "fa", "flash_attn": "fa",
    "mmap": "mmap", "use_mmap": "mmap",
    "dev": "dev", "devices": "dev",
    "sm": "sm", "split_mode": "sm",
    "ts": "ts", "tensor_split": "ts",
    "nkvo": "nkvo", "no_kv_offload": "nkvo",
    "ot": "ot", "tensor_buft_overrides": "ot",
    "main_gpu": "main_gpu", "n_cpu_moe": "n_cpu_moe",
    "mmq": "mmq", "mul_mat_q": "mmq",
    "embd": "embd", "embeddings": "embd",
    "nopo": "nopo", "no_op_offload": "nopo",
    "noh": "noh", "no_host": "noh",
    "poll": "poll", "cpu_mask": "cpu_mask", "cpu_strict": "cpu_strict",
    "n_kv_max": "n_kv_max", "is_pp_shared": "is_pp_shared", "n_threads_batch": "threads_batch",
}


_INTEGER = re.compile(r"-?\d{1,18}")  # longer: kept as the text printed


def option_value(value):
    """Integers as integers ("99" -> 99, True -> 1); anything else as the text printed."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    text = str(value).strip()
    return int(text) if _INTEGER.fullmatch(text) else text


def options_from_columns(columns: dict[str, str]) -> dict:
    """software.options from the option columns of one row (column name -> cell)."""
    options = {}
    for column, cell in columns.items():
        key = OPTION_KEYS.get(column.strip().lower())
        if key and cell not in (None, ""):
            options[key] = option_value(cell)
    return options


# Possessive: the blanks and comma between two pairs have one reading, not one per way of splitting them (D2).
_BATCHED_PARAMS = re.compile(r"^\s*main:\s*((?:\w++\s*+=\s*+-?\w++\s*+,?\s*+)+)$")
_PAIR = re.compile(r"\b(\w+)\s*=\s*(-?\w+)")


def parse_batched_params(line: str) -> dict | None:
    """Options from llama-batched-bench's "main: n_kv_max = 270336, n_batch = 2048, flash_attn = 1, ..." line."""
    if "main:" not in line:
        return None
    match = _BATCHED_PARAMS.match(line)
    if not match:
        return None
    pairs = dict(_PAIR.findall(match[1]))
    return options_from_columns(pairs) if "n_kv_max" in pairs or "is_pp_shared" in pairs else None


# ---------------------------------------------------------------------------------------------- timing logs
_TIMING = re.compile(
    r"(?P<what>prompt eval time|eval time|sample time|sampling time)\s*=\s*[\d.,]+\s*ms\s*/\s*(?P<n>\d{1,18})\s*"
    r"(?:tokens|runs)\s*\(\s*[\d.,]+\s*ms per token,\s*(?P<tps>[\d.,]+)\s*tokens per second\)"
)


@dataclass(frozen=True)
class TimingLine:
    """One line of llama_print_timings / llama_perf / llama-server timings: a speed, but not a benchmark."""

    phase: str
    tokens: int
    tokens_per_second: float
    sampling: bool


_DECIMAL_COMMA = re.compile(r"(?<!\d)\d+,\d{1,2}")


def _decimal(text: str) -> float | None:
    """Logs follow the C locale of the machine: "1200,95" is a decimal comma, "1,200.95" a thousands separator;
    None for a run of digits and points that is no number ("1.2.3")."""
    if _DECIMAL_COMMA.fullmatch(text):
        return float(text.replace(",", "."))
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def parse_timing(line: str) -> TimingLine | None:
    if "tokens per second" not in line:  # every timing line says so
        return None
    match = _TIMING.search(line)
    if not match:
        return None
    tokens_per_second = _decimal(match["tps"])
    if tokens_per_second is None:
        return None
    what = match["what"]
    phase = "prompt" if what.startswith("prompt") else "generation"
    return TimingLine(phase, int(match["n"]), tokens_per_second, sampling=what.startswith("sampl"))
