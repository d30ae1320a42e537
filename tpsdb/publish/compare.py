"""`tpsdb compare`: a machine and a model -> every measured figure with its conditions, ranked, and the computed
maximum (calc.) of each file, saying clearly when nothing was measured (issue 20: "what does model X do on my
machine", without SQL).

Ranked: generation before prompt, then one user before many, then fastest first; each figure keeps the conditions
that make two figures comparable (file, software version, lengths, concurrency) and its source.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from sqlalchemy import text
from sqlmodel import Session

from ..models import Hardware, Model
from . import ceiling as ceiling_logic

_FIGURES = text("""
select measurement_id, tokens_per_second, stddev, phase, quantization, file_size_gb, software, software_version,
       prompt_tokens, generated_tokens, context_depth, users, figure, source_url, retrieved_at
from measurement_full
where status = 'active' and nature = 'measured' and hardware = :hardware and model = :model
order by case phase when 'generation' then 0 when 'prompt' then 1 else 2 end, users, tokens_per_second desc,
         measurement_id
""")

_OTHER_MACHINES = text("""
select hardware, count(*) as n from measurement_full
where status = 'active' and nature = 'measured' and model = :model group by hardware order by n desc, hardware
""")


@dataclass
class Comparison:
    hardware: str
    model: str
    figures: list[dict] = field(default_factory=list)
    calculations: list[dict] = field(default_factory=list)  # one per file: per_user_tps, or why it is not computed
    measured_elsewhere: list[str] = field(default_factory=list)  # machines with figures for this model


def compare(session: Session, hardware: str, model: str, quantization: str | None = None) -> Comparison:
    """The figures of `model` on `hardware` (names in any case). Raises ceiling.CeilingError for an unknown name."""
    machine = ceiling_logic._by_name(session, Hardware, hardware, "hardware")
    row = ceiling_logic._by_name(session, Model, model, "model")
    result = Comparison(machine.name, row.name)
    params = {"hardware": machine.name, "model": row.name}
    result.figures = [dict(r._mapping) for r in session.execute(_FIGURES, params)
                      if quantization is None or (r.quantization or "").casefold() == quantization.casefold()]
    formats = [quantization] if quantization else sorted({f["quantization"] for f in result.figures})
    for name in formats:
        try:
            for calc in ceiling_logic.compute(session, machine.name, row.name, name):
                result.calculations.append({"quantization": calc.quantization, "file_size_gb": calc.file_size_gb,
                                            "bandwidth_gbs": calc.bandwidth_gbs, "kind": calc.bandwidth_kind,
                                            "per_user_tps": round(calc.per_user_tps, 2), "not_computed": None})
        except ceiling_logic.CeilingError as error:
            result.calculations.append({"quantization": name, "not_computed": str(error)})
    if not result.figures:
        result.measured_elsewhere = [r.hardware for r in session.execute(_OTHER_MACHINES, params)]
    return result


def _lengths(f: dict) -> str:
    parts = [f"pp{f['prompt_tokens']}" if f["prompt_tokens"] else "", f"tg{f['generated_tokens']}"
             if f["generated_tokens"] else "", f"depth {f['context_depth']}" if f["context_depth"] else ""]
    return " ".join(p for p in parts if p) or "-"


def format_text(result: Comparison) -> str:
    lines = [f"{result.model} on {result.hardware}"]
    if not result.figures:
        lines.append("nothing measured: no accepted figure of this model on this machine")
        if result.measured_elsewhere:
            lines.append("measured on: " + ", ".join(result.measured_elsewhere[:10])
                         + (", …" if len(result.measured_elsewhere) > 10 else ""))
        if not result.calculations:
            lines.append("calc. maximum: give --quantization FORMAT to compute it")
    else:
        lines.append(f"{len(result.figures)} measured figures, ranked (generation first, one user first, fastest "
                     "first):")
        lines.append("  id  tokens/s  phase  format (file GB)  software version  lengths  users  source")
        for f in result.figures:
            spread = f" ± {f['stddev']:g}" if f["stddev"] else ""
            lines.append(f"  {f['measurement_id']}  {f['tokens_per_second']:g}{spread}  {f['phase']}  "
                         f"{f['quantization']} ({f['file_size_gb']:g})  {f['software']} {f['software_version']}  "
                         f"{_lengths(f)}  {f['users']} {f['figure']}  {f['source_url']}")
    for calc in result.calculations:
        if calc["not_computed"]:
            lines.append(f"calc. maximum, {calc['quantization']}: not computed ({calc['not_computed']})")
        else:
            lines.append(f"calc. maximum, {calc['quantization']} file {calc['file_size_gb']:g} GB: "
                         f"{calc['per_user_tps']:g} tokens/s per user (CALCULATION: {calc['bandwidth_gbs']:g} GB/s "
                         f"{calc['kind']} ÷ bytes read per token; `tpsdb ceiling` shows its sources)")
    return "\n".join(lines)


def as_json(result: Comparison) -> dict:
    return asdict(result)
