"""`tpsdb ceiling`: the computed maximum generation speed of one model file on one machine, with its inputs.

max. (calc.) = memory bandwidth ÷ bytes read per token. A dense model reads its whole file for every token; a
mixture-of-experts model reads about its active share of it (active ÷ total parameters). It is a calculation, always
labelled as one, never a measurement: real figures stay below it (the time spent launching kernels, reading the
context, coordinating units is not in it).

The inputs and the rules that choose them:

- the memory bandwidth, with its kind: the hardware's reference value (`vendor`: the maker's page; `relayed`: a
  publication giving the maker's value, cited as `via`), else the value the machine's figures' own source states
  (`stated`: a thread's post), each with its own citation. A stated value never replaces a cited one.
- the bytes read per token: the file size × the active share of a mixture of experts (from the reference data,
  else llama-bench's type label in the model's name or in its figures' quotes). A mixture of experts whose active
  share is unknown has no ceiling: an error.
- one size per file: when the reference cites a size for the model in that format (`model_file.size_quote`), that
  file is the one computed; sizes its figures state that describe it (tpsdb.files: llama-bench's 3.56 GiB = 3.82 GB
  is the cited 3.79 GB file) are that file; other sizes are other files, named in a note. With no cited size, each
  size is computed.

Every number comes from tpsdb.ceiling, the rule the validator, the view and the tables use.

With N users served together, one pass over the weights yields one token for each of them, so the aggregate
ceiling is N times the one-user ceiling (for a mixture of experts this is the best case, where all users need the
same experts); the per-user ceiling does not change. At large N the compute limit comes first, which this
calculation does not see.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field

from sqlmodel import Session, col, select

from ..ceiling import Bandwidth, ModelFacts, Share, active_share, ceiling_of, choose_bandwidth, read_share
from ..models import Hardware, Measurement, Model, ModelFile, Status
from ..record import named_quantization
from .tables import bandwidth_citation
from .tables import fmt_number as _n


class CeilingError(ValueError):
    """An input of the calculation is missing or unknown; the message names it."""


@dataclass
class Ceiling:
    hardware: str
    model: str
    quantization: str
    users: int
    bandwidth_gbs: float
    bandwidth_source_url: str | None
    bandwidth_kind: str | None
    bandwidth_quote: str | None
    bandwidth_source_title: str | None
    bandwidth_via_title: str | None
    bandwidth_via_quote: str | None
    file_size_gb: float
    size_source_url: str | None
    params_b: float | None
    active_params_b: float | None
    per_user_tps: float
    aggregate_tps: float
    memory_gb: float | None
    fits: bool | None
    active_source_url: str | None = None
    active_quote: str | None = None
    share_origin: str = "dense"
    kind: str = "calculation"
    notes: list[str] = field(default_factory=list)
    model_params_b: float | None = None  # the model's own total (a label's share uses the label's rounded numbers)

    @property
    def read_share(self) -> float:
        return read_share(self.params_b, self.active_params_b)


def _suggest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.4)
    return f" Did you mean: {', '.join(repr(c) for c in close)}?" if close else ""


def _by_name(session: Session, table, name: str, what: str):
    """The row named `name`, exactly or else ignoring case (as format names are read); an unknown or ambiguous
    name is a CeilingError with the closest names."""
    row = session.exec(select(table).where(table.name == name)).first()
    if row is not None:
        return row
    known = list(session.exec(select(table.name)).all())
    same = [k for k in known if k.casefold() == name.casefold()]
    if len(same) == 1:
        return session.exec(select(table).where(table.name == same[0])).one()
    if same:
        raise CeilingError(f"{what} {name!r} matches {', '.join(map(repr, same))}, which differ only in case; "
                           "give the name exactly")
    raise CeilingError(f"{what} {name!r} is not in the database.{_suggest(name, known)}")


def compute(session: Session, hardware: str, model: str, quantization: str, users: int = 1,
            lookups: dict | None = None) -> list[Ceiling]:
    """One result per file of the model in that format (usually one). Raises CeilingError naming what is missing.
    `lookups` keeps the machine and model rows, the bandwidth and the active share across calls in one session
    (the site computes hundreds of machine, model and format triples from the same rows)."""
    if users < 1:
        raise CeilingError("--users must be at least 1")
    lookups = {} if lookups is None else lookups

    def kept(key: tuple, find):
        if key not in lookups:
            lookups[key] = find()  # an error is raised each time, never kept
        return lookups[key]

    machine = kept(("hardware", hardware), lambda: _by_name(session, Hardware, hardware, "hardware"))
    row = kept(("model", model), lambda: _by_name(session, Model, model, "model"))
    hardware, model = machine.name, row.name  # as stored: the name given may differ in case
    quant = named_quantization(quantization) or quantization
    files = session.exec(select(ModelFile).where(ModelFile.model_id == row.id, ModelFile.quantization == quant)
                         .order_by(ModelFile.size_bytes)).all()
    if not files:
        formats = sorted(set(session.exec(select(ModelFile.quantization).where(ModelFile.model_id == row.id)).all()))
        raise CeilingError(f"no {quant} file of {model} in the database (formats known: {', '.join(formats) or 'none'})")

    bandwidth = kept(("bandwidth", machine.id), lambda: _bandwidth(session, machine))
    file_ids = [f.id for f in files]
    share = kept(("share", row.id, *file_ids), lambda: _share(session, row, file_ids))
    missing = []
    if bandwidth is None:
        missing.append(f"the memory bandwidth of {hardware} is unknown (add it with the page that states it: "
                       f"`tpsdb reference FILE.toml`)")
    if all(f.size_bytes is None for f in files):
        missing.append(f"the file size of {model} {quant} is unknown")
    if not share.known:
        missing.append(f"{model} is a mixture of experts whose active parameters are unknown, so the bytes it reads "
                       "per token are unknown (add active_params_b with its source: `tpsdb reference FILE.toml`)")
    if missing:
        raise CeilingError("cannot compute the maximum: " + "; ".join(missing))
    cited = [f for f in files if f.size_quote and f.size_bytes]
    same = [f for f in files if f.same_file_id is not None and f.size_bytes and f not in cited]
    other_sizes = [f for f in files if f.size_bytes and cited and f not in cited and f not in same]
    files = cited or files

    results = []
    for f in files:
        if f.size_bytes is None:
            continue
        size_gb = f.size_bytes / 1e9
        per_user = ceiling_of(Bandwidth(bandwidth["gbs"], bandwidth["kind"]), size_gb, share).value
        assert per_user is not None  # every input was checked above
        fits = None if machine.memory_gb is None else size_gb <= machine.memory_gb
        result = Ceiling(
            hardware=hardware, model=model, quantization=quant, users=users,
            bandwidth_gbs=bandwidth["gbs"], bandwidth_source_url=bandwidth["url"], bandwidth_kind=bandwidth["kind"],
            bandwidth_quote=bandwidth["quote"], bandwidth_source_title=bandwidth["title"],
            bandwidth_via_title=bandwidth["via_title"], bandwidth_via_quote=bandwidth["via_quote"],
            file_size_gb=size_gb, size_source_url=f.size_source_url, params_b=share.params_b,
            active_params_b=share.active_params_b, per_user_tps=per_user, aggregate_tps=per_user * users,
            memory_gb=machine.memory_gb, fits=fits, share_origin=share.origin, model_params_b=row.params_b,
            active_source_url=row.active_params_source_url if share.origin == "reference" else None,
            active_quote=row.active_params_quote if share.origin == "reference" else None,
        )
        if same:
            result.notes.append(
                f"one file: figures state {', '.join(_n(o.size_bytes / 1e9) + ' GB' for o in same)} for it (a tool's "
                f"size of the cited {_n(size_gb)} GB file: within 2 %, tpsdb.files), and are computed on it")
        if other_sizes:
            result.notes.append(
                f"one size per file: the reference cites {_n(size_gb)} GB for {model} {quant}, so that file is "
                f"computed; figures also record {', '.join(_n(o.size_bytes / 1e9) + ' GB' for o in other_sizes)} "
                "for this model and format (another conversion, or a size printed in GiB), which are other files "
                "and not computed here")
        if users > 1:
            result.notes.append("aggregate = users × one-user ceiling: one pass over the weights serves every user; "
                                "at large N the compute limit comes first, which this does not see")
            if result.read_share < 1:
                worst = min(1.0, users * result.read_share)
                result.notes.append(
                    f"mixture of experts: if the {users} users need different experts, up to {worst:.0%} of the file "
                    f"is read per step and the aggregate bound falls to "
                    f"{bandwidth['gbs'] / (size_gb * worst) * users:.2f} tokens/s")
            result.notes.append("the context (KV cache) of each user needs memory on top of the file; not counted here")
        results.append(result)
    return results


def _share(session: Session, model: Model, file_ids: list[int]) -> Share:
    """The model's active share (tpsdb.ceiling): from its facts and name, else the one its figures' quotes state
    (llama-bench's label `30B.A3B`), when they all state the same: the share the validator and the view read."""
    share = active_share(model.name, None, None, ModelFacts(model.params_b, model.active_params_b,
                                                            model.mixture_of_experts))
    if share.origin not in ("dense", "unknown"):  # stated by the model's facts or name; else its figures may say
        return share
    facts = ModelFacts(model.params_b, model.active_params_b, model.mixture_of_experts)
    quotes = session.exec(select(Measurement.quote).where(
        col(Measurement.model_file_id).in_(file_ids), Measurement.status == Status.active,
        Measurement.read_share_origin == "label")).all()
    shares = {active_share(model.name, None, None, facts, quote) for quote in quotes}
    return shares.pop() if len(shares) == 1 else share


def _bandwidth(session: Session, machine: Hardware) -> dict | None:
    """The machine's bandwidth with its kind and citation (tpsdb.ceiling.choose_bandwidth): the reference's, else the
    one its figures' source states (when they all state the same value; the first figure's post is cited)."""
    chosen = choose_bandwidth(machine.memory_bandwidth_gbs, machine.bandwidth_kind, None)
    if chosen is not None:
        return {"gbs": chosen.gbs, "kind": chosen.kind,
                "url": machine.bandwidth_source_url, "quote": machine.bandwidth_quote,
                "title": machine.bandwidth_source_title, "via_title": machine.bandwidth_via_title,
                "via_quote": machine.bandwidth_via_quote}
    stated = session.exec(select(Measurement.hardware_bandwidth_gbs, Measurement.source_url, Measurement.quote)
                          .where(Measurement.hardware_id == machine.id, Measurement.status == Status.active,
                                 Measurement.hardware_bandwidth_gbs.is_not(None))
                          .order_by(Measurement.id)).all()
    values = sorted({value for value, _, _ in stated if value is not None})
    if len(values) > 1:
        raise CeilingError(f"cannot compute the maximum: the sources of {machine.name}'s figures state different "
                           f"memory bandwidths ({', '.join(_n(v) for v in values)} GB/s) and no reference value "
                           "is known (add it with the page that states it: `tpsdb reference FILE.toml`)")
    if not values:
        return None
    value, url, quote = stated[0]
    chosen = choose_bandwidth(None, None, value)
    assert chosen is not None
    return {"gbs": chosen.gbs, "kind": chosen.kind, "url": url, "quote": quote, "title": None, "via_title": None,
            "via_quote": None}


def format_text(results: list[Ceiling]) -> str:
    blocks = []
    for c in results:
        share = c.read_share
        read = (f"({_n(c.file_size_gb)} GB × {_n(c.active_params_b)} B active / {_n(c.params_b)} B total)"
                if share < 1 else f"{_n(c.file_size_gb)} GB")
        lines = [
            "CALCULATION, not a measurement: the computed maximum generation speed",
            f"  hardware     {c.hardware}",
            f"  model file   {c.model} {c.quantization}, {_n(c.file_size_gb)} GB",
            f"  users        {c.users}",
            "",
            "  max. (calc.) = memory bandwidth ÷ bytes read per token",
            f"               = {_n(c.bandwidth_gbs)} GB/s ÷ {read}",
            f"               = {c.per_user_tps:.2f} tokens/s per user",
        ]
        if c.users > 1:
            lines.append(f"  aggregate max. (calc.) for {c.users} users = {c.users} × {c.per_user_tps:.2f} "
                         f"= {c.aggregate_tps:.2f} tokens/s")
        lines += [
            "",
            "inputs and their sources",
            f"  memory bandwidth  {_n(c.bandwidth_gbs)} GB/s   "
            + bandwidth_citation(c.bandwidth_kind, c.bandwidth_source_url, c.bandwidth_quote, c.bandwidth_source_title,
                                 c.bandwidth_via_title, c.bandwidth_via_quote),
            f"  file size         {_n(c.file_size_gb)} GB   source: {c.size_source_url or 'not recorded'}",
        ]
        if c.params_b:
            lines.append(f"  parameters        {_n(c.params_b)} B total"
                         + (f", {_n(c.active_params_b)} B active per token (mixture of experts: reads {share:.1%} "
                            f"of the file per token)" if share < 1 else " (dense: reads the whole file per token)"))
        if share < 1:
            origin = (f"source: {c.active_source_url}" + (f' "{c.active_quote}"' if c.active_quote else "")
                      if c.share_origin == "reference" else
                      f"stated by llama-bench's type label ({_n(c.active_params_b)} of {_n(c.params_b)} B)"
                      + (f"; the model's total is {_n(c.model_params_b)} B" if c.model_params_b else "")
                      if c.share_origin == "label" else "stated by the record")
            lines.append(f"  active share      {origin}")
        lines += ["", "memory"]
        if c.memory_gb is None:
            lines.append(f"  the model file needs {_n(c.file_size_gb)} GB; the memory of {c.hardware} is unknown, "
                         f"so whether it fits is unknown")
        elif c.fits:
            lines.append(f"  the model file needs {_n(c.file_size_gb)} GB; {c.hardware} has {_n(c.memory_gb)} GB: "
                         f"it fits ({_n(c.memory_gb - c.file_size_gb)} GB left for the context, the program and the "
                         f"system)")
        else:
            lines.append(f"  the model file needs {_n(c.file_size_gb)} GB; {c.hardware} has {_n(c.memory_gb)} GB: "
                         f"it does NOT fit ({_n(c.file_size_gb - c.memory_gb)} GB short); the figure above assumes "
                         f"it does")
        if c.notes:
            lines += ["", "notes"] + [f"  - {note}" for note in c.notes]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def as_json(results: list[Ceiling]) -> list[dict]:
    out = []
    for c in results:
        data = asdict(c)
        data["read_share"] = c.read_share
        data["formula"] = "memory_bandwidth_gbs / (file_size_gb * active_params_b / params_b)"
        out.append(data)
    return out
