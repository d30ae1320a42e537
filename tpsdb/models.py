"""The tables of tpsdb. One class per table; its docstring says what one row is.

Units are in the column names (`size_bytes`, `memory_bandwidth_gbs`, `params_b`). Enumerated values are
plain strings checked by the validator (and by CHECK constraints), so the SQLite file stays readable by any tool.
"""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import BigInteger, CheckConstraint, Column, Index, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

# The vocabularies live in tpsdb.vocab: the tables' CHECK constraints are written from them (re-exported here).
from .vocab import BandwidthKind, Figure, NatureKind, Phase, SourceType, Status, sql_in, values  # noqa: F401


class Source(SQLModel, table=True):
    """A publication that holds figures: a GitHub discussion, an article, a benchmark file."""

    __tablename__ = "source"
    id: int | None = Field(default=None, primary_key=True)
    url: str = Field(unique=True, description="canonical URL, without fragment")
    key: str | None = Field(default=None, unique=True, description="name of the file in sources/, if any")
    kind: str = Field(default=SourceType.web, description=", ".join(values(SourceType)))
    title: str | None = None
    licence: str | None = None
    refresh_interval_hours: float | None = None


class Snapshot(SQLModel, table=True):
    """One HTTP response (or ingested file) exactly as received, archived before anything is parsed from it."""

    __tablename__ = "snapshot"
    __table_args__ = (UniqueConstraint("source_id", "fetched_url", "sha256"),)
    id: int | None = Field(default=None, primary_key=True)
    source_id: int = Field(foreign_key="source.id", index=True)
    fetched_url: str = Field(description="the URL actually requested (may be a mirror or a test server)")
    canonical_url: str = Field(description="the public https://github.com/... address the bytes stand for")
    sha256: str = Field(index=True)
    body: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    http_status: int = 200
    etag: str | None = None
    last_modified: str | None = None
    content_type: str | None = None
    page_index: int = Field(default=0, description="position in the pagination chain of one refresh")
    retrieved_at: datetime


class Post(SQLModel, table=True):
    """One item of a source: the opening post, a comment or a reply of a discussion."""

    __tablename__ = "post"
    __table_args__ = (UniqueConstraint("source_id", "external_id"),)
    id: int | None = Field(default=None, primary_key=True)
    source_id: int = Field(foreign_key="source.id", index=True)
    external_id: str
    permalink: str = Field(unique=True)
    kind: str = "comment"
    parent_external_id: str | None = None
    author: str | None = None
    published_at: datetime | None = None
    edited_at: datetime | None = None
    minimized: bool = False
    deleted: bool = False
    body_sha256: str | None = Field(default=None, description="sha256 of the body HTML the figures were read from")
    snapshot_id: int | None = Field(default=None, foreign_key="snapshot.id")
    status: str = Field(default=Status.active, sa_column_kwargs={"server_default": "active"})


class Hardware(SQLModel, table=True):
    """A machine or accelerator figures ran on, with its memory bandwidth and the page that states it."""

    __tablename__ = "hardware"
    __table_args__ = (
        CheckConstraint(f"bandwidth_kind IS NULL OR {sql_in('bandwidth_kind', BandwidthKind)}",
                        name="ck_hardware_bandwidth_kind"),
    )
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    vendor: str | None = None
    memory_gb: float | None = None
    memory_bandwidth_gbs: float | None = None
    bandwidth_source_url: str | None = None
    bandwidth_quote: str | None = Field(default=None, sa_column=Column(Text))
    bandwidth_kind: str | None = Field(default=None, description="vendor, relayed or stated (see BandwidthKind)")
    bandwidth_source_title: str | None = Field(default=None, description="the document that states the bandwidth")
    bandwidth_via_title: str | None = Field(default=None, description="relayed: the publication that relays it")
    bandwidth_via_url: str | None = None
    bandwidth_via_quote: str | None = Field(default=None, sa_column=Column(Text))
    gpu_cores: int | None = None
    notes: str | None = Field(default=None, sa_column=Column(Text))


class Model(SQLModel, table=True):
    """A language model, independent of its file format."""

    __tablename__ = "model"
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    params_b: float | None = Field(default=None, description="total parameters, billions")
    active_params_b: float | None = Field(default=None, description="parameters read per token (mixture of experts)")
    mixture_of_experts: bool | None = Field(default=None, description="true: reads only its active parameters per "
                                            "token; null: not known")
    active_params_source_url: str | None = Field(default=None, description="the page that states active_params_b")
    active_params_quote: str | None = Field(default=None, sa_column=Column(Text))


class ModelFile(SQLModel, table=True):
    """One file of a model in one quantization format, with its size and where the size comes from."""

    __tablename__ = "model_file"
    __table_args__ = (UniqueConstraint("model_id", "quantization", "size_bytes"),)
    id: int | None = Field(default=None, primary_key=True)
    model_id: int = Field(foreign_key="model.id", index=True)
    quantization: str = Field(index=True)
    size_bytes: int | None = Field(default=None, sa_type=BigInteger)  # files pass 2 GiB: int64 on PostgreSQL
    size_source_url: str | None = None
    size_quote: str | None = Field(default=None, sa_column=Column(Text),
                                   description="the reference's quote of the size: set for the cited file")
    same_file_id: int | None = Field(default=None, foreign_key="model_file.id",
                                     description="the cited file this stated size describes (tpsdb.files' rule)")


class Software(SQLModel, table=True):
    """A program at one version (llama.cpp b6918 (2f68ce7cf), vLLM 0.11.0, Ollama 0.12.3…)."""

    __tablename__ = "software"
    __table_args__ = (UniqueConstraint("name", "version"),)
    id: int | None = Field(default=None, primary_key=True)
    name: str
    version: str
    build_number: int | None = None
    build_commit: str | None = None


class Measurement(SQLModel, table=True):
    """One accepted figure: a value in tokens/s with all six conditions and its provenance."""

    __tablename__ = "measurement"
    __table_args__ = (
        CheckConstraint(sql_in("phase", Phase), name="ck_measurement_phase"),
        CheckConstraint(sql_in("figure", Figure), name="ck_measurement_figure"),
        CheckConstraint(sql_in("nature_kind", NatureKind), name="ck_measurement_nature"),
        CheckConstraint(sql_in("status", Status), name="ck_measurement_status"),
        Index("ix_measurement_table", "model_file_id", "hardware_id", "phase", "users", "status"),
    )
    id: int | None = Field(default=None, primary_key=True)
    figure_key: str = Field(unique=True, description="sha256 of the canonical record: the natural key")
    slot: str | None = Field(default=None, description="the figure's place in its post (table, row, column)")
    hardware_id: int = Field(foreign_key="hardware.id", index=True)
    model_file_id: int = Field(foreign_key="model_file.id")
    software_id: int = Field(foreign_key="software.id")
    software_options: str = Field(default="{}", description="JSON object, keys sorted")
    phase: str
    prompt_tokens: int | None = None
    generated_tokens: int
    context_depth: int = 0
    users: int
    figure: str
    nature_kind: str
    procedure: str | None = Field(default=None, sa_column=Column(Text))
    formula: str | None = None
    formula_inputs: str | None = Field(default=None, description="JSON object of a computed figure's inputs")
    tokens_per_second: float
    stddev: float | None = None
    source_id: int = Field(foreign_key="source.id", index=True)
    source_url: str = Field(description="the figure's own address (a comment permalink where there is one)")
    post_id: int | None = Field(default=None, foreign_key="post.id", index=True)
    snapshot_id: int | None = Field(default=None, foreign_key="snapshot.id")
    retrieved_at: date
    published_at: date | None = None
    author: str | None = None
    quote: str = Field(sa_column=Column(Text, nullable=False))
    via_title: str | None = None
    via_publisher: str | None = None
    via_url: str | None = None
    via_published_at: date | None = None
    status: str = Field(default=Status.active)  # filtered with the table index, never alone
    supersedes_id: int | None = Field(default=None, foreign_key="measurement.id")
    hardware_bandwidth_gbs: float | None = Field(
        default=None, description="bandwidth stated by the record itself, when it differs from the reference"
    )
    read_share: float | None = Field(default=None, description="share of the file read per token (tpsdb.ceiling); "
                                     "null: a mixture of experts whose active parameters are unknown")
    read_share_origin: str | None = Field(default=None, description="record, reference, label, dense or unknown")
    quote_header: str | None = Field(default=None, sa_column=Column(Text),
                                     description="the header line of the table the quoted row is from")


class Rejection(SQLModel, table=True):
    """A candidate figure that failed validation, kept as given with its reason codes."""

    __tablename__ = "rejection"
    __table_args__ = (CheckConstraint(sql_in("status", Status), name="ck_rejection_status"),)
    id: int | None = Field(default=None, primary_key=True)
    candidate_key: str = Field(unique=True, description="sha256 of the candidate as given")
    slot: str | None = None
    candidate_json: str = Field(sa_column=Column(Text, nullable=False))
    reasons: str = Field(sa_column=Column(Text, nullable=False), description="JSON list of reason codes")
    source_url: str | None = Field(default=None, index=True)
    quote: str | None = Field(default=None, sa_column=Column(Text))
    tokens_per_second: float | None = None
    source_id: int | None = Field(default=None, foreign_key="source.id", index=True)
    post_id: int | None = Field(default=None, foreign_key="post.id")
    snapshot_id: int | None = Field(default=None, foreign_key="snapshot.id")
    status: str = Field(default=Status.active)
    quote_header: str | None = Field(default=None, sa_column=Column(Text),
                                     description="the header line of the table the quoted row is from")


class Withdrawal(SQLModel, table=True):
    """A figure its user withdrew (`tpsdb withdraw`): the figure stays, with status withdrawn; this says why and
    when."""

    __tablename__ = "withdrawal"
    id: int | None = Field(default=None, primary_key=True)
    measurement_id: int = Field(foreign_key="measurement.id", index=True)
    why: str = Field(sa_column=Column(Text, nullable=False))
    withdrawn_at: str = Field(description="UTC date and time, ISO 8601")


class RefreshRun(SQLModel, table=True):
    """One refresh of one source: what was asked, what changed, how it ended."""

    __tablename__ = "refresh_run"
    id: int | None = Field(default=None, primary_key=True)
    source_id: int = Field(foreign_key="source.id", index=True)
    started_at: datetime
    finished_at: datetime | None = None
    status: str = Field(default="running", description="running, ok, unchanged, failed")
    transport: str | None = None
    requests: int = 0
    not_modified: int = 0
    new_figures: int = 0
    changed_figures: int = 0
    withdrawn_figures: int = 0
    rejected_figures: int = 0
    error: str | None = Field(default=None, sa_column=Column(Text))
    snapshot_ids: str | None = Field(
        default=None, sa_column=Column(Text), description="JSON list: the pages this run read, in order"
    )
