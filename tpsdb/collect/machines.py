"""Hardware names: one canonical spelling per machine, whatever way a post writes it.

`canonical_hardware` reads a short name ("GB10", "M2 Max (30-core GPU)", "RTX 3090 Ti") or a whole line
("Device 0: NVIDIA GeForce RTX 3090 Ti, compute capability 8.6") and returns the canonical name of the first
machine it names, or None. Names that say nothing about the chip ("NVIDIA Graphics Device", "AMD Radeon Graphics")
and hosts (a CPU, a Raspberry Pi, "Strix Halo") are deliberately not matched: a wrong machine is worse than none.

`hardware_mentions` finds every machine named in a text, with its position and kind (gpu, cpu or soc);
`device_on_line` and `devices_hardware` read the device lines that llama.cpp (CUDA, ROCm, Vulkan, Metal, SYCL)
and nvidia-smi print (several identical GPUs become "8x NVIDIA A100 80GB PCIe").

Besides the built-in patterns below, the families, aliases and generic cleaning rules of
data/reference/names/machines.toml apply (data, not code). A device line names its device even when nothing
knows it: its name, cleaned by the generic rules ((R), (TM), "Graphics", driver notes dropped), is the machine,
as long as it is a vendor's name and a model number (`open_world_name`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass

from tpsdb.config import REFERENCE_DIR
from tpsdb.memo import short_text_memo

CATALOGUE_PATH = REFERENCE_DIR / "names" / "machines.toml"
_CATALOGUE = tomllib.loads(CATALOGUE_PATH.read_text(encoding="utf-8"))

# Exact names (compared case-insensitively, spaces collapsed) that the patterns below cannot spell out.
ALIASES: dict[str, str] = {
    "gb10": "NVIDIA DGX Spark",
    "nvidia gb10": "NVIDIA DGX Spark",
    "dgx spark": "NVIDIA DGX Spark",
    "nvidia dgx spark": "NVIDIA DGX Spark",
    "nvidia dgx spark (gb10)": "NVIDIA DGX Spark",
    "dgx spark (gb10)": "NVIDIA DGX Spark",
    **_CATALOGUE.get("alias", {}),
}


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    name: str
    kind: str = "gpu"  # "gpu" (an accelerator), "cpu" (a host processor) or "soc" (both: Apple M, DGX Spark)


def _apple(m: re.Match) -> str:
    chip = f"Apple M{m['gen']}" + (f" {m['tier']}" if m["tier"] else "")
    cores = m["cores_before"] or m["cores_after"]
    return f"{chip} ({int(cores)}-core GPU)" if cores else chip


# The GeForce numbers: a generation digit, 0, then 50..90 (RTX 2060, 3090, 4070, 5090; GTX 1080). RTX 3500, 4000,
# 5000, 6000 are workstation cards (Quadro RTX 6000, RTX 6000 Ada, RTX 3500 Ada Laptop), never sold as GeForce: their
# name gets no brand word the text does not print.
_GEFORCE_NUMBER = re.compile(r"\d?\d0[5-9]0|[7-9][5-9]0")


def _geforce(m: re.Match) -> str:
    family = m["family"].upper()
    if family == "RTX" and not _GEFORCE_NUMBER.fullmatch(m["number"]) and "geforce" not in m[0].lower():
        return f"NVIDIA RTX {m['number']}" + (" Laptop GPU" if m["laptop"] else "")
    name = f"NVIDIA GeForce {family} {m['number']}"
    if m["ti"]:
        name += " Ti"
    if m["super"]:
        name += " SUPER"
    if m["laptop"]:
        name += " Laptop GPU"  # a laptop part of the same number is a different, slower chip
    return name


def _rtx_pro(m: re.Match) -> str:
    return f"NVIDIA RTX PRO {m['number']} Blackwell" + (" Max-Q" if m["maxq"] else "")


def _rtx_workstation(m: re.Match) -> str:
    model = m["model"]
    return f"NVIDIA RTX {model}" if model.startswith("A") else f"NVIDIA RTX {model.split()[0]} Ada Generation"


_SPACES = re.compile(r"\s+")


def _datacenter(m: re.Match) -> str:
    # The driver's own spelling ("A100 80GB PCIe", "A100-SXM4-80GB", "H100 80GB HBM3") says which variant it is.
    return "NVIDIA " + m["model"] + _SPACES.sub(" ", m["variant"] or "").rstrip()


def _radeon(m: re.Match) -> str:
    prefix = {"rx": "RX ", "pro": "Pro "}.get((m["line"] or "").lower(), "")
    suffix = f" {m['suffix'].upper()}" if m["suffix"] else ""
    return f"AMD Radeon {prefix}{m['number']}{suffix}"


_CORES_AFTER = r"(?:\s*+\(?\s*(?P<cores_after>\d{1,2})[- ]?(?:core|c)?\s*GPU(?:\s*cores?)?\s*\)?)?"
_DATACENTER_VARIANT = r"(?P<variant>(?:[ -](?:\d+\s?GB|PCIe|SXM\d?|HBM\de?|NVL))*)"

# (pattern, builder). Order does not matter: overlapping matches are resolved by position, then length.
_PATTERNS: list[tuple[re.Pattern, Callable[[re.Match], str]]] = [
    (re.compile(r"\b(?:NVIDIA\s+)?(?:DGX\s+Spark|GB10)\b(?:\s*\(GB10\))?", re.I), lambda m: "NVIDIA DGX Spark"),
    # the original Jetson Nano (Tegra X1, 2019) is another board than the Jetson Orin Nano: "Nano" alone is the former
    (re.compile(r"\b(?:NVIDIA\s+)?Jetson\s+(?P<model>AGX\s+Orin|Orin\s+NX|Orin\s+Nano|AGX\s+Thor|AGX\s+Xavier|"
                r"Xavier\s+NX|Thor|Nano|TX2|TX1)\b"),
     lambda m: "NVIDIA Jetson " + " ".join(m["model"].split())),
    # the SoC a Jetson Nano's (or a Switch's) CUDA device line prints ("Device 0: NVIDIA Tegra X1"): the chip, not
    # a board the text may not name
    (re.compile(r"\b(?:NVIDIA\s+)?Tegra\s+(?P<model>X1|X2|K1)\b"), lambda m: f"NVIDIA Tegra {m['model']}"),
    (re.compile(r"\b(?:NVIDIA\s+)?RTX\s+PRO\s+(?P<number>\d{4})(?:\s+Blackwell)?(?:\s+(?P<maxq>Max-Q))?", re.I),
     _rtx_pro),
    (re.compile(r"\b(?:NVIDIA\s+)?RTX\s+(?P<model>A\d{4}|\d{4}\s+Ada(?:\s+Generation)?)\b"), _rtx_workstation),
    (re.compile(r"\b(?:NVIDIA\s+)?(?:GeForce\s+)?(?P<family>RTX|GTX)\s*(?P<number>\d{3,4})(?:\s*(?P<ti>Ti)\b)?"
                r"(?:\s*(?P<super>SUPER)\b)?(?:\s+(?P<laptop>Laptop(?:\s+GPU)?))?", re.I), _geforce),
    # Big data-centre parts are unambiguous on their own; short ones ("T4", "L4", "A10") need the brand in front.
    (re.compile(r"\b(?:NVIDIA\s+|Tesla\s+)?(?P<model>A100|H100|H200|H800|A800|B200|B300|GH200|GB200|L40S|V100)\b"
                + _DATACENTER_VARIANT), _datacenter),
    (re.compile(r"\b(?:NVIDIA|Tesla)\s+(?P<model>L40|L4|A40|A30|A10G|A10|T4|P40|P100)\b" + _DATACENTER_VARIANT),
     _datacenter),
    (re.compile(r"\b(?:NVIDIA\s+)?CMP\s+(?P<model>\d{2,3}HX)\b"), lambda m: f"NVIDIA CMP {m['model']}"),
    # "M2-Max" is an M2 Max: the hyphen joins the tier, it does not drop it
    (re.compile(r"(?:\b(?P<cores_before>\d{1,2})[- ]core\s+(?:GPU\s+)?)?\b(?:Apple\s+)?M(?P<gen>[1-9])"
                r"(?:(?:\s+|-)(?P<tier>Pro|Max|Ultra))?\b(?!\s*(?:SSD|\.2))" + _CORES_AFTER), _apple),
    (re.compile(r"\b(?:AMD\s+)?(?:Instinct\s+)?(?P<model>MI\d{2,3}[XAH]?)\b"), lambda m: f"AMD Instinct {m['model']}"),
    (re.compile(r"\b(?:AMD\s+)?Radeon\s+(?:(?P<line>RX|Pro)\s+)?(?P<number>W?\d{3,4}[A-Z]{0,2})\b"
                r"(?:\s+(?P<suffix>XTX|XT|GRE)\b)?", re.I), _radeon),
    (re.compile(r"\bRX\s*(?P<number>\d{3,4})(?:\s+(?P<suffix>XTX|XT|GRE)\b)?"),
     lambda m: f"AMD Radeon RX {m['number']}" + (f" {m['suffix']}" if m["suffix"] else "")),
    (re.compile(r"\b(?:Intel\s+)?Arc\s+(?P<model>A\d{3}M?|B\d{3}|140V|130V)\b"), lambda m: f"Intel Arc {m['model']}"),
    # a Ryzen named by its number alone ("Ryzen-7950X", "Ryzen 5950X"): named as printed, no tier word added (the
    # tier is not a rule of the number: a 3970X is a Threadripper)
    (re.compile(r"\b(?:AMD\s+)?Ryzen[- ](?P<number>[1-9]\d{3}(?:X3D|XT|HX|HS|GE|[XGHUF])?)\b"),
     lambda m: f"AMD Ryzen {m['number']}"),
    # Huawei's NPUs as llama.cpp's CANN backend prints them ("gpu_info": "Ascend910B3"): one maker's parts only
    (re.compile(r"\b(?:Huawei\s+)?Ascend\s*+(?P<model>9[1-9]0[A-Z]?\d?|310[A-Z]?)\b"), lambda m: f"Huawei Ascend {m['model']}"),
]

_MULTI = re.compile(r"^\s*(?P<count>\d{1,2})\s*[x×]\s*(?P<rest>.+)$")

# What each pattern above cannot match without (same order): lower-case words that the lower-cased text must hold,
# or, for the case-sensitive short names, a cheap search on the text itself. Most lines name no machine: these
# tests turn them away at the cost of a few substring searches instead of a dozen regular expressions.
_M_DIGIT = re.compile(r"M[1-9]").search
_NEEDS: list[tuple[str, ...] | Callable[[str], object]] = [
    ("dgx", "gb10"),
    ("jetson",),
    ("tegra",),
    ("rtx",),
    ("rtx",),
    ("rtx", "gtx"),
    ("a100", "h100", "h200", "h800", "a800", "b200", "b300", "l40s", "v100"),
    ("nvidia", "tesla"),
    ("cmp",),
    _M_DIGIT,
    lambda text: "MI" in text,
    ("radeon",),
    lambda text: "RX" in text,
    lambda text: "Arc" in text,
    ("ryzen",),
    ("ascend",),
]
assert len(_NEEDS) == len(_PATTERNS)
_KINDS = ["soc", "soc", "soc"] + ["gpu"] * 6 + ["soc"] + ["gpu"] * 4 + ["cpu", "gpu"]
assert len(_KINDS) == len(_PATTERNS)


def _family_builder(family: dict) -> Callable[[re.Match], str]:
    template, upper = family["name"], set(family.get("upper", ()))

    def build(m: re.Match) -> str:
        groups = {k: (v.upper() if k in upper else v) if v else "" for k, v in m.groupdict().items()}
        return " ".join(template.format(**groups).split())
    return build


# The catalogue's families (data/reference/names/machines.toml), after the built-in patterns: on a tie (same
# start, same length) the built-in name is kept.
_FAMILIES = [re.compile(f["pattern"]) for f in _CATALOGUE.get("family", [])]
_ENTRIES = [(pattern, build, needs, kind) for (pattern, build), needs, kind in zip(_PATTERNS, _NEEDS, _KINDS)] + [
    (pattern, _family_builder(f), tuple(f["needs"]), f["kind"])
    for pattern, f in zip(_FAMILIES, _CATALOGUE.get("family", []))]

# Generic cleaning: trademark marks go before any pattern is tried ("Intel(R) Arc(TM) B580" is "Intel Arc B580").
_CLEAN = _CATALOGUE.get("clean", {})
_MARKS = tuple(_CLEAN.get("marks", ()))


def clean_marks(text: str) -> str:
    """The text without (R), (TM), ® and ™."""
    for mark in _MARKS:
        if mark in text:
            text = text.replace(mark, " " if mark.startswith("(") else "")
    return text


def hardware_patterns(text: str, among: list | None = None, cleaned: bool = False) -> list:
    """The patterns (of `among`, else of all) that may match somewhere in the text: those whose needed words
    it holds. For a larger text, the only ones to try on each of its lines. `cleaned`: the text has been through
    clean_marks already."""
    if not cleaned:
        text = clean_marks(text)
    lower = text.lower()
    possible = []
    for entry in _ENTRIES if among is None else among:
        needs = entry[2]
        if callable(needs):
            if needs(text):
                possible.append(entry)
        else:
            for word in needs:
                if word in lower:
                    possible.append(entry)
                    break
    return possible


def hardware_mentions(text: str, patterns: list | None = None) -> list[Mention]:
    """Every machine named in the text, in reading order (overlaps: the longest match wins).

    `patterns`: from `hardware_patterns` of a larger text holding this one (the only ones worth trying).
    """
    if patterns is not None and not patterns:
        return []
    text = clean_marks(text)
    found = [(m.start(), m.end(), m, build, kind)
             for pattern, build, _, kind in hardware_patterns(text, patterns, cleaned=True)
             for m in pattern.finditer(text)]
    if not found:
        return []
    found.sort(key=lambda x: (x[0], x[0] - x[1]))
    kept: list[Mention] = []
    for start, end, match, build, kind in found:
        if not kept or start >= kept[-1].end:
            kept.append(Mention(start, end, build(match), kind))  # names built for the kept matches only
    return kept


@short_text_memo  # a scoreboard or a compare table names the same chips row after row, post after post
def canonical_hardware(text: str) -> str | None:
    """The canonical name of the first machine the text names, or None when it names none."""
    if not text or not text.strip():
        return None
    key = " ".join(text.split()).lower()
    if key in ALIASES:
        return ALIASES[key]
    multi = _MULTI.match(text)
    if multi and int(multi["count"]) > 1:
        single = canonical_hardware(multi["rest"])
        return f"{int(multi['count'])}x {single}" if single else None
    mentions = hardware_mentions(text)
    if mentions:
        return mentions[0].name
    return ALIASES.get(" ".join(clean_marks(text).split()).lower()) or open_world_name(text)


_NOISE = {w.lower() for w in _CLEAN.get("noise", ())}
_VAGUE = set(_CATALOGUE.get("vague", {}).get("names", ()))
_VENDORS = tuple(_CLEAN.get("vendors", ()))
_FAMILY_WORDS = {w.lower() for w in _CLEAN.get("family_words", ())}
_VENDOR_OF_FAMILY = {"geforce": "NVIDIA", "quadro": "NVIDIA", "tesla": "NVIDIA", "titan": "NVIDIA",
                     "radeon": "AMD", "instinct": "AMD", "arc": "Intel", "iris": "Intel", "adreno": "Qualcomm"}
_CODE_NAME = re.compile(r"[A-Z]{3}(?:-[A-Z])?")  # MTL, LNL, ARL, ADL-S: Intel's iGPU code names


def strip_driver_notes(name: str) -> str:
    """A device name without the driver's notes in parentheses ("(RADV NAVI31) (radv)", "(Intel open-source Mesa
    driver)"); a code name alone in parentheses ("(MTL)") stays: for an iGPU it is the only model there is."""
    out, depth, note = [], 0, []
    for ch in name:
        if ch == "(":
            depth += 1
            note = []
        elif ch == ")" and depth:
            depth -= 1
            inner = "".join(note).strip()
            if not depth and _CODE_NAME.fullmatch(inner):
                out.append(f"({inner})")
        elif depth:
            note.append(ch)
        else:
            out.append(ch)
    return " ".join("".join(out).split())


def open_world_name(text: str) -> str | None:
    """The name of a device no pattern knows, by generic rules: a vendor (or a family that says it), then only
    family words and model numbers ("NVIDIA GeForce GT 1030", "Moore Threads MTT S80"). Names that say nothing
    about the chip ("NVIDIA Graphics Device", "AMD Radeon Graphics") and prose are None."""
    name = strip_driver_notes(clean_marks(text))
    if not name or name.lower() in _VAGUE:
        return None
    alias = ALIASES.get(name.lower())
    if alias:
        return alias
    vendor = next((v for v in _VENDORS if name.lower().startswith(v.lower() + " ")), None)
    rest = name[len(vendor):].split() if vendor else name.split()
    if not vendor and rest:
        vendor = _VENDOR_OF_FAMILY.get(rest[0].lower())
    words = [w for w in rest if w.lower() not in _NOISE]
    if not vendor or not words or not any(c.isdigit() for w in words for c in w):
        return None
    if not all(w.lower() in _FAMILY_WORDS or any(c.isdigit() for c in w) for w in words):
        return None
    name = " ".join([vendor] + words)
    return None if name.lower() in _VAGUE else name


# ---------------------------------------------------------------------------------- device lines in logs
# What llama.cpp (CUDA/ROCm, Vulkan, Metal) and nvidia-smi print for each device they use, on one line. The
# names keep the blanks around them (device_on_line strips them): a name that both begins and ends with a run of
# blanks is read in one pass, where "\s*(?P<name>.+?)\s*" tries every split of each run (quadratic).
_DEVICE_LINES = [
    re.compile(r"^\s*Device\s+(?P<index>\d{1,9}):(?P<name>[^,]+),"),
    # bounded: a try from every "ggml_vulkan:" of a line must not read the rest of the line; the driver's notes
    # in parentheses are dropped after (strip_driver_notes)
    re.compile(r"ggml_vulkan:\s*(?P<index>\d{1,9})\s*=(?P<name>[^|]{1,200})\|"),
    re.compile(r"ggml_metal_(?:device_)?init:\s*(?:found device|GPU name):(?P<name>.+)$"),
    # llama.cpp's "using device CUDA0 (NVIDIA GeForce RTX 4090) - 23008 MiB free", "MTL0 (Apple M2 Max)"
    re.compile(r"\busing device\s++[A-Za-z]++(?P<index>\d{1,3})\s*+\((?P<name>[^()]{1,200})\)"),
    # SYCL's device table: "| 0| [level_zero:gpu:0]|  Intel Arc A770 Graphics|  1.3|  512|"
    re.compile(r"^\s*\|\s*+(?P<index>\d{1,3})\s*+\|\s*+\[\w{1,20}:gpu:\d{1,3}\]\s*+\|(?P<name>[^|]{1,200})\|"),
    # the name ends at its last non-blank before the run of blanks and On/Off: only those ends are tried
    re.compile(r"^\|\s+(?P<index>\d{1,9})\s+(?P<name>(?:NVIDIA|Tesla)\s.(?:.*?\S)??)\s{2,}(?:On|Off)\s+\|"),
]


def may_name_device(text: str) -> bool:
    """Whether a text holds a word that every device-line pattern needs (most text holds none)."""
    return ("Device" in text or "ggml_" in text or "NVIDIA" in text or "Tesla" in text or "using device" in text
            or ":gpu:" in text)


def is_system_listing(line: str) -> bool:
    """Whether a device line is nvidia-smi's (which lists every GPU of the machine, not those a run used)."""
    return "|" in line and _DEVICE_LINES[-1].search(clean_marks(line)) is not None


def device_on_line(line: str) -> tuple[int, str] | None:
    """(device index, raw device name) on a device line, or None if the line is not one."""
    if not may_name_device(line):
        return None
    line = clean_marks(line)
    for pattern in _DEVICE_LINES:
        match = pattern.search(line)
        if match:
            name = strip_driver_notes(match["name"])
            return (int(match.groupdict().get("index") or 0), name) if name else None
    return None


def device_hardware(name: str) -> str | None:
    """The machine a device line names: its canonical name, else its own name by the generic rules."""
    return canonical_hardware(name) or open_world_name(name)


def devices_hardware(names: list[str]) -> str | None:
    """One hardware name for the devices of one run; None when any device is unnamed ("NVIDIA Graphics Device")."""
    canonical = [device_hardware(name) for name in names]
    if not canonical or None in canonical:
        return None
    distinct = list(dict.fromkeys(canonical))
    if len(distinct) == 1:
        return distinct[0] if len(canonical) == 1 else f"{len(canonical)}x {distinct[0]}"
    return " + ".join(canonical)


# ------------------------------------------------------------------------------- which devices a run used
Device = tuple[int, str, bool]  # (index in the log's list, raw name, integrated GPU)
_DEVICE_NAME = re.compile(r"^[A-Za-z]{2,10}(?P<index>\d{1,3})$")  # "CUDA1", "Vulkan0", "ROCm2", "MTL0", "SYCL0"


def default_devices(listed: tuple[Device, ...] | list[Device]) -> list[Device]:
    """The devices llama.cpp gives a model when the run names none: every discrete GPU, and the integrated ones
    only when the list holds no other. llama.cpp src/llama.cpp, llama_model_load_from_file_impl: "add GPUs", then
    "add integrated GPUs only if no other devices were found" (GGML_BACKEND_DEVICE_TYPE_IGPU: a Vulkan device whose
    type is eIntegratedGpu, which its device line prints as `uma: 1`)."""
    discrete = [d for d in listed if not d[2]]
    return discrete or list(listed)


def select_devices(listed: tuple[Device, ...] | list[Device], options: dict) -> list[Device]:
    """The devices a run used, from its options as llama-bench prints them (or its command gives them):
    `dev` ("CUDA0/CUDA1", "none"; "auto" is the default), then `ts` (a device with share 0 gets no layer), then
    `sm none` (only the main GPU, `main_gpu` of the model's devices, default 0: llama_model_load_from_file_impl,
    "if using single GPU mode, remove all except the main GPU")."""
    chosen = default_devices(listed)
    dev = str(options.get("dev", "") or "").strip()
    if dev and dev.lower() != "auto":
        if dev.lower() == "none":
            return []
        by_index = {d[0]: d for d in listed}
        picked = []
        for part in re.split(r"[/,]", dev):
            match = _DEVICE_NAME.match(part.strip())
            if not match or int(match["index"]) not in by_index:
                return []  # a device the log does not list: which one ran is unknown
            picked.append(by_index[int(match["index"])])
        chosen = picked
    shares = _shares(options.get("ts"))
    if shares and len(shares) <= len(chosen) and any(shares):
        chosen = [d for k, d in enumerate(chosen) if k >= len(shares) or shares[k] > 0]
    if str(options.get("sm", "")).strip().lower() == "none":
        main = options.get("main_gpu", 0)
        main = int(main) if str(main).lstrip("-").isdecimal() else 0
        return [chosen[main]] if 0 <= main < len(chosen) else []
    return chosen


def _shares(value) -> list[float] | None:
    """`-ts 1/0` or `1,0` (llama-bench prints "1.00/0.00"); None when there is no split or it is no list."""
    if value in (None, ""):
        return None
    try:
        shares = [float(part) for part in re.split(r"[/,]", str(value)) if part.strip()]
    except ValueError:
        return None
    return shares if len(shares) > 1 else None
