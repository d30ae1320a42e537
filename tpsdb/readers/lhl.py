"""lhl/strix-halo-testing `llm-bench/<model>/results.jsonl`: one line per llama-bench run of a sweep (pp and tg at
1 … 8192 tokens), the run's llama-bench JSON record in `bench_raw`, with power and memory telemetry around it.

`bench_raw` is read by the llama-bench file reader (tpsdb.collect.benchfiles), so a record reads as it does from
`llama-bench -o jsonl`. The machine is named by the `system_info.json` beside the file (its `cpu`), not by the
record's `gpu_info` ("AMD Radeon Graphics"). A line without a record is a failed run, and a run over RPC (llama.cpp
split across machines) is not one machine's figure: both are rejections with the reason. The quote is the
`bench_raw` object as it stands in the line."""

from __future__ import annotations

import json
import posixpath
import re

from tpsdb.collect import llamabench as lb
from tpsdb.collect.benchfiles import extract_bench_file
from tpsdb.collect.extract import Candidate, new_record
from tpsdb.collect.machines import canonical_hardware
from tpsdb.readers import FileContext
from tpsdb.readers._common import jsonl_lines, loads, member_span, post_context, run_slot
from tpsdb.readers.kyuz0 import model_name

# llama-bench's type label ends with the file type name; a label the common reader cannot split
# ("llama4 17Bx16E (Scout) Q4_K - Medium", "gpt-oss ?B F16") still ends with it.
_FTYPE_AT_END = re.compile(r"\s((?:I?Q\d\w*(?:\s*-\s*\w+)?)|BF16|F16|F32|MXFP4(?: MoE)?)$")

NAME = "lhl"
SOFTWARE = "llama.cpp"

SYSTEM_INFO = "system_info.json"


def system_info_path(path: str) -> str:
    """Where the machine of a results.jsonl is stated: the system_info.json of the same folder."""
    return posixpath.join(posixpath.dirname(path), SYSTEM_INFO)


def machine(ctx: FileContext) -> str | None:
    """The machine system_info.json names (its `cpu`: "AMD RYZEN AI MAX+ 395 w/ Radeon 8060S"), as tpsdb names it."""
    raw = ctx.siblings.get(system_info_path(ctx.path))
    if raw is None:
        return None
    try:
        info = loads(raw, SYSTEM_INFO)
    except ValueError:  # not JSON (or not UTF-8): it names no machine, and each figure says so
        return None
    if not isinstance(info, dict):
        return None
    details = info.get("gpu_details") if isinstance(info.get("gpu_details"), dict) else {}
    # an engineering sample's CPU string names no product ("AMD Eng Sample"): then the GPU device it states
    for stated in (info.get("cpu"), details.get("device_name")):
        name = canonical_hardware(stated) if isinstance(stated, str) else None
        if name:
            return name
    return None


def read(data: bytes, ctx: FileContext) -> list[Candidate]:
    post = post_context(ctx)
    hardware = machine(ctx)
    out = []
    for number, line in enumerate(jsonl_lines(data.decode("utf-8-sig")), 1):
        if not line.strip():
            continue
        row = loads(line, f"line {number}")
        if not isinstance(row, dict):
            raise ValueError(f"line {number}: not a JSON object")
        out.append(_candidate(row, line, number, post, hardware))
    return out


def _candidate(row: dict, line: str, number: int, post, hardware: str | None) -> Candidate:
    identity = (row.get("start_time"), row.get("build"), row.get("mode"), row.get("value"))
    raw = row.get("bench_raw")
    quote = member_span(line, "bench_raw") if isinstance(raw, dict) else None
    if quote is None:  # a failed run: what the line says, kept as a rejection
        record = new_record(post, line.strip(), hardware=hardware, software=SOFTWARE, users=1, figure="per_user",
                            procedure="llama-bench", value=row.get("tokens_per_sec"))
        return Candidate(record, run_slot(*identity),
                         ["nature: failed run (the line holds no llama-bench record), no figure"])
    candidate = extract_bench_file(json.dumps(raw).encode(), "jsonl", post, hardware)[0]
    candidate.record["source"]["quote"] = quote
    _name_model(candidate.record, raw)
    candidate.slot = run_slot(*identity)
    backends = str(raw.get("backends") or "")
    if "RPC" in backends.upper().split(","):
        candidate.reasons.append(f"hardware.name: RPC run (backends {backends}: llama.cpp split over the network "
                                 "to other machines), not one machine's figure")
    if not hardware:
        candidate.reasons.append(f"hardware.name: no {SYSTEM_INFO} beside the file names the machine")
    return candidate


def _name_model(record: dict, raw: dict) -> None:
    """The model as its file names it ("Qwen3-32B" of /models/gguf/Qwen3-32B-Q8_0.gguf): llama-bench's label
    ("qwen3 32B") names only the architecture and size; and the quant from the label's end where the common
    reader could not split it."""
    stem = posixpath.basename(str(raw.get("model_filename") or "").replace("\\/", "/"))
    stem = re.sub(r"(-\d{5}-of-\d{5})?\.gguf$", "", stem)
    if stem:
        record["model"]["name"] = model_name(stem)
    if record["quantization"] is None:
        found = _FTYPE_AT_END.search(str(raw.get("model_type") or ""))
        record["quantization"] = lb.normalize_quant(found.group(1)) if found else None
