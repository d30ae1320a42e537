"""A post read for its figures: the pieces in reading order, the clues around the tables, and what a figure is
made into (PostContext, Candidate, Reading, new_record, the numbers no column holds).

This is the floor under the readers: `extract` (the tables llama.cpp's tools print) and `tools` (the speeds other
tools print) both take a Reading and return Candidates, and `extract` runs both, so neither reader imports the other
(issue 17: no import circle). Pure: no network, no database. `extract` re-exports these names for its callers.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from itertools import accumulate

from lxml import etree

from tpsdb.collect import llamabench as lb
from tpsdb.collect.machines import (
    default_devices, device_on_line, devices_hardware, hardware_mentions, hardware_patterns,
    is_system_listing, may_name_device, select_devices,
)
from tpsdb.record import quote_header_problem

__all__ = ["COMPARE_TABLE", "SAMPLING_SPEED", "SUMMARY_TABLE", "Candidate", "PostContext", "Reading",
           "carry_quote_headers", "command_run_options", "model_name", "new_record", "refuse_unstorable_numbers"]


@dataclass(frozen=True)
class PostContext:
    permalink: str  # canonical https://github.com/ggml-org/llama.cpp/discussions/N#discussioncomment-ID
    retrieved_at: str  # ISO date
    published_at: str | None  # ISO date of the post
    author: str | None
    protocol: dict  # the [protocol] table of the source file (may be {})


@dataclass
class Candidate:
    record: dict  # record format v1; fields the source does not give are None
    slot: str  # the figure's place in the post ("t2:r5:generation"), stable across edits of the post
    reasons: list[str] = field(default_factory=list)  # extractor-level rejection codes, "<field>: <reason>"


# Extractor-level reason codes, spelled once.
COMPARE_TABLE = "nature: compare table ({}), not a measurement with known conditions"
SUMMARY_TABLE = "nature: hand-made summary table (no model column), not pasted llama-bench output"
SAMPLING_SPEED = "phase: sampling speed, not model throughput"


# ----------------------------------------------------------------------------------------------- HTML trees
# One parser for pages and bodies (lxml, libxml2's HTML parser): comments and processing instructions are not
# text, and GitHub serves UTF-8 whatever a page declares.
_PARSER = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, collect_ids=False,
                           default_doctype=False)
# A body on its own (GraphQL's bodyHTML, a stored body_html) is parsed as a document's <body>: whatever it holds,
# stray end tags included, stays inside. (On the page it sits in a table cell, td.comment-body: for the HTML GitHub
# renders, both parse to the same tree, which the transport tests check byte for byte.)
_BODY_OPEN, _BODY_CLOSE = b"<html><body>", b"</body></html>"


def parse_page(page: bytes | str):
    """The root element of an HTML page, or None when there is nothing to parse."""
    data = page.encode("utf-8", "replace") if isinstance(page, str) else page
    if not data or data.isspace():
        return None
    try:
        return etree.fromstring(data, _PARSER)
    except etree.LxmlError:
        return None


def parse_body(fragment: str):
    """A body's HTML (GraphQL's bodyHTML, or a stored body_html) parsed into a container element (its <body>)."""
    root = etree.fromstring(_BODY_OPEN + fragment.encode("utf-8", "replace") + _BODY_CLOSE, _PARSER)
    return root.find("body")


def inner_html(element) -> str:
    """The HTML inside an element, serialized by libxml2 (the one serialization both transports share)."""
    html = etree.tostring(element, method="html", encoding="unicode", with_tail=False)
    return html[html.index(">") + 1:html.rindex("<")].strip()


class _BodyHtml(str):
    """A body's HTML that still holds the element it was serialized from: extract_post reads that element
    instead of parsing the string again. Everywhere else it is the plain string (equal, same hash)."""

    element = None

    def __reduce__(self):  # pickled or copied: the string alone
        return str, (str(self),)


def body_html_of(element) -> str:
    """The normalized body HTML of an element (a page's td.comment-body or a parsed bodyHTML)."""
    body = _BodyHtml(inner_html(element))
    body.element = element
    return body


def drop_element(element) -> None:
    """Remove an element and what it holds, keeping the text that follows it (as BeautifulSoup's decompose)."""
    parent = element.getparent()
    if parent is None:
        return
    if element.tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + element.tail
        else:
            parent.text = (parent.text or "") + element.tail
    parent.remove(element)


# =============================================================================================== the post
@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    quotes: list[str]  # per row: the row as the source shows it (rebuilt as "| a | b |" for HTML tables)
    # The header line as the source shows it: when a headerless run of rows continues a table, its first row was
    # read as a header, and its quote must still be the line as written, not one rebuilt from the cells.
    header_quote: str = ""


@dataclass
class Piece:
    kind: str  # "text" | "heading" | "table"
    lines: list[str] = field(default_factory=list)
    table: Table | None = None


_SEPARATOR_CELL = re.compile(r"^:?-+:?$")
_SEPARATOR_ROW = re.compile(r"[\s|:-]*")  # what a separator row can be made of (the cells are checked after)


def _split_cells(line: str) -> list[str]:
    text = line.strip()
    text = text[1:] if text.startswith("|") else text
    text = text[:-1] if text.endswith("|") else text
    return [cell.strip() for cell in text.split("|")]


def _pipe_table(lines: list[str]) -> Piece:
    """A run of `| … |` lines; the separator row is optional (some pastes lack it)."""
    rows, quotes = [], []
    for line in lines:
        cells = _split_cells(line)
        if _SEPARATOR_ROW.fullmatch(line) and any(cells) and all(_SEPARATOR_CELL.match(c) for c in cells if c):
            continue
        rows.append(cells)
        quotes.append(line.strip())
    return Piece("table", table=Table(rows[0] if rows else [], rows[1:], quotes[1:], quotes[0] if quotes else ""))


_FENCE = re.compile(r"^(```|~~~)")
_MARKDOWN_HEADING = re.compile(r"^#{1,6}\s")


def pieces_from_text(text: str, *, markdown: bool) -> list[Piece]:
    """Text in reading order. In Markdown, `> ` quotes are dropped and `#` lines are headings (outside fences)."""
    if not markdown and "|" not in text:  # plain prose, the common case: one piece, or none when blank
        return [Piece("text", lines=text.splitlines())] if text.strip() else []
    pieces: list[Piece] = []
    prose: list[str] = []
    pipes: list[str] = []
    in_fence = False

    def flush() -> None:
        if pipes:
            pieces.append(_pipe_table(pipes))
            pipes.clear()
        if any(line.strip() for line in prose):
            pieces.append(Piece("text", lines=list(prose)))
        prose.clear()

    lines = text.splitlines()
    width = 0  # the cells of the pipe table being read (a row without outer pipes must have as many)
    for k, line in enumerate(lines):
        stripped = line.strip()
        if markdown and _FENCE.match(stripped):
            in_fence = not in_fence
            flush()
            continue
        if markdown and not in_fence and stripped.startswith(">"):
            continue  # quoted from another post
        if stripped.startswith("|") or (
                "|" in stripped and _bare_row(stripped, width if pipes else 0, lines[k + 1] if k + 1 < len(lines) else "")):
            if prose:
                flush()
            if not pipes:
                width = len(_split_cells(line))
            pipes.append(line)
            continue
        if pipes:
            flush()
        if markdown and not in_fence and _MARKDOWN_HEADING.match(stripped):
            flush()
            pieces.append(Piece("heading", lines=[stripped.lstrip("#").strip()]))
            continue
        prose.append(line)
    flush()
    return pieces


def _bare_row(line: str, width: int, next_line: str) -> bool:
    """A table row written without outer pipes ("model | size | t/s"): a header followed by its separator row, or
    a row of as many cells as the table being read (a log line with a "|" is neither)."""
    cells = len(_split_cells(line))
    if cells < 3:
        return False
    if width:
        return cells == width
    following = next_line.strip()
    return (bool(following) and _SEPARATOR_ROW.fullmatch(following) is not None and "-" in following
            and len(_split_cells(following)) == cells)


def join_split_tables(pieces: list[Piece]) -> list[Piece]:
    """Rows of one table cut by log lines, blank lines or a <details> block: a run of rows without a header,
    of the width of the last table with a header, continues it (its rows, after the ones before)."""
    out: list[Piece] = []
    last: Table | None = None
    for piece in pieces:
        table = piece.table
        if piece.kind == "table" and table is not None:
            if last is not None and table.header and lb.table_kind(table.header) is None \
                    and len(table.header) == len(last.header) and _looks_like_rows(last, table):
                last.rows += [table.header] + table.rows
                last.quotes += [table.header_quote] + table.quotes
                continue
            last = table if lb.table_kind(table.header) else None
        out.append(piece)
    return out


def _looks_like_rows(head: Table, rows: Table) -> bool:
    """Whether a headerless run's first line is a row of the table: a number where the table prints its speed."""
    names = [h.strip().lower() for h in head.header]
    for k, name in enumerate(names):
        if "t/s" in name:
            return k < len(rows.header) and lb.parse_value(rows.header[k]) is not None
    return False


_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_BLOCKS = _HEADINGS | {"p", "div", "ul", "ol", "li", "table", "pre", "details", "summary", "section", "article",
                       "dl", "dt", "dd", "hr", "figure", "markdown-accessiblity-table"}
# Quoted text belongs to the quoted post; the rest is chrome (copy buttons, icons, client-side templates).
_DROP = {"blockquote", "template", "script", "style", "svg", "clipboard-copy"}
_BLOCK_TAGS, _DROP_TAGS = tuple(sorted(_BLOCKS)), tuple(sorted(_DROP))
_SPECIAL_TAGS = _DROP_TAGS + ("br",)  # what makes an element's text more than its text nodes


def pieces_from_html(body_html: str) -> list[Piece]:
    element = getattr(body_html, "element", None)  # the page's own element: no second parse
    if element is None:
        element = parse_body(body_html or "")
    pieces: list[Piece] = []
    _Walk(element).walk(element, pieces)
    return pieces


class _Walk:
    """One body read in order. Most elements hold no <br> and nothing dropped: their text is their text nodes,
    read by lxml at C speed; only the elements above a <br> or a dropped element are read string by string."""

    def __init__(self, body):
        self.body = body
        self.mixed: set = set()  # the elements holding a <br> or a dropped element somewhere below
        self.dropping: set = set()  # the elements holding a dropped element somewhere below
        for special in body.iterdescendants(*_SPECIAL_TAGS):
            marks = (self.mixed, self.dropping) if special.tag in _DROP else (self.mixed,)
            for ancestor in special.iterancestors():
                if ancestor in marks[-1]:
                    break
                for marked in marks:
                    marked.add(ancestor)
                if ancestor is body:
                    break

    def walk(self, node, pieces: list[Piece]) -> None:
        text = node.text
        if node is self.body and text:
            text = text.lstrip(" \t\n\r")  # as a parser drops the blanks a <body> starts with
        if text and not text.isspace():
            pieces += pieces_from_text(text, markdown=False)
        for child in node:
            tag = child.tag
            if tag in _DROP or tag == "br" or not isinstance(tag, str):
                pass  # a <br> between blocks is an empty line: no piece
            elif tag == "table":
                pieces.append(self.table(child))
            elif tag == "pre":
                pieces += pieces_from_text(self.text(child), markdown=False)
            elif tag in _HEADINGS:
                strings = (s.strip() for s in _strings(child)) if child in self.mixed else \
                    (s.strip() for s in child.itertext())
                pieces.append(Piece("heading", lines=[" ".join(s for s in strings if s)]))
            elif self.has_block(child):
                self.walk(child, pieces)
            else:
                pieces += pieces_from_text(self.text(child), markdown=False)
            text = child.tail
            if text and not text.isspace():
                pieces += pieces_from_text(text, markdown=False)

    def has_block(self, element) -> bool:
        if not len(element):
            return False
        if element in self.dropping:
            return any(not _dropped(d, element) for d in element.iterdescendants() if d.tag in _BLOCKS)
        for d in element.iterdescendants():
            if d.tag in _BLOCKS:
                return True
        return False

    def text(self, element) -> str:
        if not len(element):
            return element.text or ""
        if element in self.mixed:
            return "".join(_strings(element))
        return "".join(element.itertext())

    def table(self, table) -> Piece:
        rows = None if table in self.dropping else self._plain_rows(table)
        if rows is None:  # rows and cells at any depth, as long as they are not dropped
            rows = [[" ".join(self.text(cell).split()) for cell in tr.iter("th", "td") if not _dropped(cell, table)]
                    for tr in table.iter("tr") if not _dropped(tr, table)]
        if not rows:
            return Piece("table", table=Table([], [], []))
        quotes = ["| " + " | ".join(cells) + " |" for cells in rows]
        return Piece("table", table=Table(rows[0], rows[1:], quotes[1:], quotes[0]))

    def _plain_rows(self, table) -> list[list[str]] | None:
        """The usual table: its cells are its rows' own children. None when it holds a table (whose rows and
        cells are also this table's) or has cells below something else than a row."""
        rows = []
        text = self.text
        for tr in table.iter("tr"):
            cells = []
            for cell in tr:
                if len(cell):  # elements inside: rarer, looked at closer
                    tag = cell.tag
                    if (tag != "td" and tag != "th") or next(cell.iterdescendants("table"), None) is not None:
                        return None
                    cells.append(" ".join(text(cell).split()))
                else:
                    tag = cell.tag
                    if tag == "td" or tag == "th":
                        cells.append(" ".join(cell.text.split()) if cell.text else "")
            rows.append(cells)
        return rows


def _dropped(element, top) -> bool:
    """Is the element inside a dropped one (below top)?"""
    for ancestor in element.iterancestors():
        if ancestor is top:
            return False
        if ancestor.tag in _DROP:
            return True
    return False


def _strings(element):
    """The text of an element piece by piece, as read: <br> is a line break, dropped elements are not read."""
    if element.text:
        yield element.text
    for child in element:
        tag = child.tag
        if tag == "br":
            yield "\n"
        elif tag not in _DROP and isinstance(tag, str):
            yield from _strings(child)
        if child.tail:
            yield child.tail


# ============================================================================================== the clues
Position = tuple[int, int]  # (piece index, line index)


@dataclass
class Clue:
    pos: Position
    kind: str  # "hardware" | "version" | "command" | "batched_params"
    value: object


@dataclass(frozen=True)
class Machine:
    """A machine a post names: from a device line of a log, a heading or a line of prose."""

    name: str
    kind: str  # "gpu" | "cpu" | "soc" (machines.Mention.kind)
    source: str  # "device" | "heading" | "line"
    # A device list (source "device"): every device the log lists, (index, raw name, integrated), so that a run's
    # options (-sm none, -dev, -ts) can name the devices it used; `name` is llama.cpp's default choice of them.
    devices: tuple[tuple[int, str, bool], ...] = ()
    # nvidia-smi lists every GPU of the machine (a run's CUDA_VISIBLE_DEVICES picks among them); a log lists only
    # the devices the run could see
    whole_machine: bool = False


AMBIGUOUS_HARDWARE = "hardware.name: ambiguous ({})"
# how far after a table a machine named only there may be: the pieces after it (its footer, the words under it) and
# their first lines
_TRAILING_PIECES, _TRAILING_LINES = 2, 10
UNNAMED_DEVICES = "hardware.name: the run's devices ({}) are not all named"
UNCHOSEN_DEVICES = "hardware.name: which of the listed devices ({}) the run used is unknown"
CPU_ONLY = "the run found no GPU (CPU only)"
# The backends of a llama-bench row that run on the host processor: such a row's machine is the CPU the post names.
_CPU_BACKENDS = {"cpu", "blas", "cpu,blas", "blas,cpu", "openblas", "cpu, blas", "accelerate",
                 # the instruction sets ik_llama.cpp's tables print in the backend column: the host processor
                 "avx2", "avx512", "zen4", "neon", "arm_neon"}


def _text_lines(piece: Piece, kind: str | None) -> list[str]:
    """The lines of a piece that may carry clues: prose, headings, and tables that hold no figure (nvidia-smi)."""
    if piece.kind != "table":
        return piece.lines
    if kind is not None:
        return []
    return [piece.table.header_quote] + piece.table.quotes


def _footer(line: str) -> bool:
    """Whether a build line is llama-bench's footer ("build: 3bdc4cd0 (7739)" on a line of its own), not a build a
    sentence names ("Here is what I get on my Ryzen-7950X (`build: 26a8406b (4295)`)", the next table's)."""
    return line.strip().strip("`*_ ").lower().startswith("build")


def read_clues(pieces: list[Piece], kinds: list[str | None]) -> list[Clue]:
    clues: list[Clue] = []
    for i, (piece, kind) in enumerate(zip(pieces, kinds)):
        if kind is not None:
            # GitHub's Markdown makes a line right after a table (llama-bench's "build:" footer) a row of it
            footers = [Clue((i, j + 1), "version", version) for j, quote in enumerate(piece.table.quotes)
                       if "build" in quote and (version := lb.parse_build(quote))]
            clues += footers + [Clue(c.pos, "footer", c.value) for c in footers]
        lines = _text_lines(piece, kind)
        if not lines:
            continue
        whole = "\n".join(lines)
        # What the piece may hold at all (the words each reader needs), so that its lines are only read for that.
        machines = hardware_patterns(whole)  # the machine names to look for, if any
        devices = may_name_device(whole)
        builds = lb.may_state_build(whole)
        heading = piece.kind == "heading"
        stated = heading or lb.may_state_version(whole)
        batched = "main:" in whole
        cpu_words = lb.may_say_cpu_only(whole)
        forks = "llama.cpp" in whole or "ik_llama" in whole or "ainline" in whole  # a fork's label needs one
        if not (machines or devices or builds or stated or batched or cpu_words or forks or "llama-b" in whole):
            continue
        runs: list[list[tuple[int, int, str, bool]]] = []  # the device lines of each run printed in this piece
        system_lists: set[int] = set()  # the runs that nvidia-smi printed
        for j, line in enumerate(lines):
            device = device_on_line(line) if devices else None
            if device:
                index, name = device
                if not runs or index == 0 or index != len(runs[-1]):  # "Device 0" again: another run's log
                    runs.append([])
                runs[-1].append((j, index, name, _integrated(line)))
                if is_system_listing(line):
                    system_lists.add(len(runs) - 1)
                continue
            if cpu_words and lb.says_cpu_only(line):
                clues.append(Clue((i, j), "cpu_only", True))
            elif cpu_words and (visible := lb.visible_devices(line)) is not None:
                clues.append(Clue((i, j), "visible", visible))
            if machines:
                source = "heading" if piece.kind == "heading" else "line"
                clues += [Clue((i, j), "hardware", Machine(m.name, m.kind, source))
                          for m in hardware_mentions(line, machines)]
            fork = lb.fork_label(line) if forks and len(line) < 80 and ("llama.cpp" in line or "ik_llama" in line
                                                                   or "ainline" in line) else None
            if fork:
                clues.append(Clue((i, j), "fork", fork))
            version = lb.parse_build(line) if builds else None
            if version:
                clues.append(Clue((i, j), "version", version))
                if _footer(line):
                    clues.append(Clue((i, j), "footer", version))
            else:
                for version in (lb.parse_stated_versions(line, heading) if stated else ()):
                    clues.append(Clue((i, j), "stated_version", version))
            params = lb.parse_batched_params(line) if batched else None
            if params:
                clues.append(Clue((i, j), "batched_params", params))
        # The devices of one run name its machine together (8 devices -> "8x ..."): those llama.cpp uses by default.
        for r, run in enumerate(runs):
            listed = tuple((index, name, integrated) for _, index, name, integrated in run)
            machine = devices_hardware([name for _, name, _ in default_devices(listed)])
            if machine:  # a device no name says anything of ("AMD Radeon Graphics") names no machine
                kinds = {m.kind for m in hardware_mentions(machine)}
                clues.append(Clue((i, run[0][0]), "hardware", Machine(machine, "soc" if "soc" in kinds else "gpu",
                                                                       "device", listed, r in system_lists)))
        # A command may span lines ("\\" continuations). Its line number after joining is only approximate, which
        # is enough: positions only order clues against tables, and a table is always a piece of its own.
        if "llama-b" in whole:  # no command without the tool's name
            for j, line in enumerate(lb.join_continuations(whole).splitlines()):
                command = lb.parse_command(line)
                if command:
                    clues.append(Clue((i, j), "command", command))
    clues.sort(key=lambda c: c.pos)
    return clues


class Reading:
    """The post with its clues: answers "what does the post say about the figures at this position"."""

    def __init__(self, pieces: list[Piece], ctx: PostContext):
        self.pieces = pieces
        self.ctx = ctx
        self.protocol = ctx.protocol or {}
        self.kinds = [lb.table_kind(p.table.header) if p.kind == "table" else None for p in pieces]
        self._clues: list[Clue] | None = None
        # What the rows of the post's tables repeat, read once per post: cell text -> its reading.
        self.tests: dict[str, lb.TestShape | None] = {}
        self.models: dict[tuple, ModelRow] = {}
        self.names: dict[tuple, str | None] = {}
        self.option_values: dict[str, object] = {}
        self._by_kind: dict[str, list[Clue]] | None = None
        # Sections, counted once: the headings before each piece, and each section's llama-bench tables.
        self._headings_before: list[int] | None = None
        self._bench_tables: dict[int, list[int]] | None = None
        self.table_models: dict[int, ModelRow | None] = {}  # llama-bench table -> its one model (_section_model)
        self._hardware: dict[tuple, tuple[str | None, str | None]] = {}
        self._pool_cache: dict[str | None, list[_MachinePool]] = {}
        self._previous_tables: list[int] | None = None
        self._stated_versions: int | None = None
        self._build_versions: int | None = None
        self._next_tables: list[int] | None = None
        self._commands: dict[str, list[Clue]] = {}
        self._device_names: dict[tuple, object] = {}
        self._repository_fork: str | None = None  # the fork the post's repository is, "" when none

    @property
    def clues(self) -> list[Clue]:
        """Read when a table asks (a post without a figure table needs none)."""
        if self._clues is None:
            self._clues = read_clues(self.pieces, self.kinds)
        return self._clues

    def _of(self, kind: str, test=None) -> list[Clue]:
        if self._by_kind is None:
            self._by_kind = {}
            for clue in self.clues:
                self._by_kind.setdefault(clue.kind, []).append(clue)
        clues = self._by_kind.get(kind, [])
        return clues if test is None else [c for c in clues if test(c.value)]

    def hardware_at(self, pos: Position, wanted: str | None = None, since: Position | None = None,
                    options: dict | None = None) -> tuple[str | None, str | None]:
        """(machine, None), or (None, the reason it is unknown) for the figures of a table (or a run) at `pos`.

        `wanted`: "cpu" for rows a CPU backend ran (the host processor named), "gpu" for the other backends, None
        when the table does not say (an accelerator, else a processor). `since`: where the run's own block starts
        (default: after the previous figure table); a line of that block saying no GPU was found ("failed to
        initialize CUDA", `CUDA_VISIBLE_DEVICES=` empty) makes it a CPU run whatever its backend column says.
        `options`: the run's -sm/-mg/-dev/-ts, which name the devices it used among those its log lists."""
        if not self._of("hardware"):  # the post names no machine: nothing to choose from
            return None, None
        if since is None:  # a table: its stretch runs from the previous figure table to the next
            since, until = (self.previous_table(pos[0]), 1 << 30), (self.next_table(pos[0]), -1)
        else:  # a run: its block ends at its figures
            until = pos
        selection = _selection_key(options)
        key = (pos, wanted, since, selection)
        found = self._hardware.get(key)
        if found is None:
            if self._cpu_only_between(since, pos) or str((options or {}).get("dev", "")).lower() == "none":
                wanted = "cpu"
            found = (None, None)
            for pool in self._pools(wanted):
                machine, unknown = pool.machine_for(pos, since, until)
                if machine is not None and machine.source == "device" and wanted != "cpu":
                    listed = machine.devices
                    if machine.whole_machine:  # the run saw only its CUDA_VISIBLE_DEVICES of them
                        visible = self._visible_between(since, pos)
                        if visible is not None:
                            by_index = {d[0]: d for d in listed}
                            listed = tuple(by_index[k] for k in visible if k in by_index)
                            if len(listed) < len(visible):
                                listed = ()  # a device the list does not hold: which ran is unknown
                    if listed is machine.devices and not selection:
                        chosen, name = [()], machine.name  # llama.cpp's default choice: named with the list
                    else:
                        chosen = select_devices(listed, options or {}) if listed else []
                        name = self._devices_name(tuple(chosen)) if chosen else None
                    found = (name, None) if name else \
                        (None, UNNAMED_DEVICES.format(", ".join(n for _, n, _ in chosen)) if chosen else
                         UNCHOSEN_DEVICES.format(", ".join(n for _, n, _ in machine.devices)))
                elif machine is not None:
                    found = (machine.name, None)
                else:
                    found = (None, unknown)
                if found != (None, None):
                    break
            self._hardware[key] = found
        return found

    def _pools(self, wanted: str | None) -> list[_MachinePool]:
        """The machines a table of that kind may take, read once per post (D7: not once per figure)."""
        pools = self._pool_cache.get(wanted)
        if pools is None:
            clues = self._of("hardware")
            stretch, section = self.previous_table, self.section_opened
            lists = [c.pos for c in clues if c.value.source == "device"]
            pool = partial(_MachinePool, previous_table=stretch, section=section, device_lists=lists)
            if wanted == "cpu":
                pools = [pool([c for c in clues if c.value.kind != "gpu"])]
            else:
                pools = [pool([c for c in clues if c.value.kind != "cpu"])]
                if wanted is None:
                    pools.append(pool([c for c in clues if c.value.kind == "cpu"]))
            self._pool_cache[wanted] = pools
        return pools

    def _devices_name(self, chosen: tuple) -> str | None:
        """The machine the chosen devices make (memoized: every figure of a run asks it)."""
        name = self._device_names.get(chosen, _UNREAD)
        if name is _UNREAD:
            name = self._device_names[chosen] = devices_hardware([n for _, n, _ in chosen])
        return name

    def _visible_between(self, since: Position, pos: Position) -> tuple[int, ...] | None:
        """The devices the run's CUDA_VISIBLE_DEVICES names, when its block sets it."""
        marks = self._of("visible")
        k = bisect_left(marks, pos, key=_position)
        return marks[k - 1].value if k and marks[k - 1].pos > since else None

    def _cpu_only_between(self, since: Position, pos: Position) -> bool:
        marks = self._of("cpu_only")
        if not marks:
            return False
        k = bisect_left(marks, pos, key=_position)
        return bool(k) and marks[k - 1].pos > since

    def previous_table(self, index: int) -> int:
        """The piece index of the figure table before piece `index` (-1 when none)."""
        if self._previous_tables is None:
            previous, last = [], -1
            for j, kind in enumerate(self.kinds):
                previous.append(last)
                if kind is not None:
                    last = j
            self._previous_tables = previous
        return self._previous_tables[index] if index < len(self._previous_tables) else -1

    def next_table(self, index: int) -> int:
        """The piece index of the figure table after piece `index` (len(pieces) when none)."""
        if self._next_tables is None:
            following, last = [0] * len(self.kinds), len(self.kinds)
            for j in range(len(self.kinds) - 1, -1, -1):
                following[j] = last
                if self.kinds[j] is not None:
                    last = j
            self._next_tables = following
        return self._next_tables[index] if index < len(self._next_tables) else len(self.kinds)

    def software_at(self, pos: Position, default: str = "llama.cpp") -> str:
        """The fork that printed the figures at `pos`: the one a label since the previous figure table names
        ("### ik_llama.cpp", "<summary>llama.cpp</summary>"), else the repository the post belongs to, else the
        tool's own (`default`)."""
        labels = self._of("fork")
        if labels:
            k = bisect_left(labels, pos, key=_position)
            if k and labels[k - 1].pos[0] > self.previous_table(pos[0]):
                return labels[k - 1].value
        if self._repository_fork is None:
            self._repository_fork = "ik_llama.cpp" if "github.com/ikawrakow/ik_llama.cpp" in (self.ctx.permalink or "") \
                else ""
        return self._repository_fork or default

    def version_at(self, pos: Position) -> str | None:
        """The build line after the table (llama-bench prints it as a footer), else the last one before; else a
        version the post states in passing: the only one it states, else the nearest before, else after."""
        builds = self._of("version")
        if builds:
            # a build line belongs to the table it follows or precedes, never to one past another figure table
            # (another run, maybe of another fork); else the post's only build
            k = bisect_right(builds, pos, key=_position)
            # after the table: its footer, before the next one and under no heading of its own (a heading starts
            # another section: "## GPU with a33e6a0" over the log of another run; a sentence naming a build after
            # the table introduces the next one, issue 19)
            if k < len(builds) and builds[k].pos[0] < self.next_table(pos[0]) \
                    and self.section_opened(builds[k].pos[0]) == self.section_of(pos[0]) \
                    and self._is_footer(builds[k].pos):
                return builds[k].value
            if k and builds[k - 1].pos[0] > self.previous_table(pos[0]):
                return builds[k - 1].value
            if self._build_versions is None:
                # the post's only build, unless the post shows the output of two forks (whose builds differ)
                forks = {c.value for c in self._of("fork")}
                self._build_versions = len({c.value for c in builds}) if len(forks) < 2 else 0
            return builds[0].value if self._build_versions == 1 and self._not_later(builds[0], pos) else None
        stated = self._of("stated_version")
        if self._stated_versions is None:
            self._stated_versions = len({c.value for c in stated})
        if self._stated_versions == 1:
            return stated[0].value if self._not_later(stated[0], pos) else None
        # several versions stated: the one stated since the previous figure table (one only), else the one stated
        # after the table before the next; else which one ran is unknown
        lo = bisect_right(stated, (self.previous_table(pos[0]), 1 << 30), key=_position)
        mid = bisect_left(stated, pos, key=_position)
        hi = bisect_left(stated, (self.next_table(pos[0]), -1), key=_position)
        section = self.section_of(pos[0])
        for start, end in ((lo, mid), (mid, hi)):
            own = {c.value for c in stated[max(start, end - 8):end]
                   if end == mid or self.section_opened(c.pos[0]) == section}
            if own:
                return own.pop() if len(own) == 1 and end - start <= 8 else None
        return None

    def _is_footer(self, at: Position) -> bool:
        footers = self._of("footer")
        k = bisect_left(footers, at, key=_position)
        return k < len(footers) and footers[k].pos == at

    def _not_later(self, first: Clue, pos: Position) -> bool:
        """Whether the first of a text's clues may speak for the table at `pos`: printed before it, or in its
        section; a build printed only under a later heading is that section's ("#### Discussion", a reply's
        "build 4404 for llama.cpp" under an ik_llama.cpp table)."""
        return first.pos < pos or self.section_opened(first.pos[0]) == self.section_of(pos[0])

    def command_at(self, pos: Position, tool: str) -> str | None:
        commands = self._commands.get(tool)
        if commands is None:
            commands = self._commands[tool] = self._of("command", lambda v: v[0] == tool)
        found = _before_then_after(commands, pos)
        return found[1] if found else None

    def batched_params_at(self, pos: Position) -> dict:
        clues = self._of("batched_params")
        k = bisect_left(clues, pos, key=_position)
        return dict(clues[k - 1].value) if k else {}

    def section_of(self, index: int) -> int:
        """The section of a piece: how many headings come before it."""
        if self._headings_before is None:
            self._headings_before = list(accumulate((p.kind == "heading" for p in self.pieces), initial=0))
        return self._headings_before[index]

    def section_opened(self, index: int) -> int:
        """The section a piece is part of, a heading being part of the section it opens."""
        return self.section_of(index) + (self.pieces[index].kind == "heading")

    def bench_tables_in(self, section: int) -> list[int]:
        """The llama-bench tables of a section (their piece indexes, in order)."""
        if self._bench_tables is None:
            self._bench_tables = {}
            for j, kind in enumerate(self.kinds):
                if kind == lb.LLAMA_BENCH:
                    self._bench_tables.setdefault(self.section_of(j), []).append(j)
        return self._bench_tables.get(section, [])

    # Memoized readings of cells (pure functions of their text).
    def test(self, label: str) -> lb.TestShape | None:
        shape = self.tests.get(label, _UNREAD)
        if shape is _UNREAD:
            shape = self.tests[label] = lb.parse_test(label)
        return shape

    def model(self, model: str, params: str, size: str, backend: str) -> ModelRow:
        key = (model, params, size, backend)
        row = self.models.get(key)
        if row is None:
            label, quant = lb.split_model_label(model)
            row = self.models[key] = ModelRow(label, quant, lb.parse_params_b(params), lb.parse_size_gb(size),
                                              backend or None)
        return row

    def model_name(self, model: ModelRow, files: tuple[str, ...]) -> str | None:
        key = (model.label, model.params_b, files)
        name = self.names.get(key, _UNREAD)
        if name is _UNREAD:
            name = self.names[key] = model_name(model.label, model.params_b, self.protocol, files)
        return name

    def option_value(self, cell: str):
        value = self.option_values.get(cell, _UNREAD)
        if value is _UNREAD:
            value = self.option_values[cell] = lb.option_value(cell)
        return value


_UNREAD = object()  # not in a memo yet (None is an answer)


# The clues of a kind are in position order (read_clues sorts them): the last one before a position is the one
# before the first at or after it, the first one after it is the first past all those at it.
def _before_then_after(clues: list[Clue], pos: Position):
    if not clues:
        return None
    k = bisect_left(clues, pos, key=_position)
    if k:
        return clues[k - 1].value
    k = bisect_right(clues, pos, key=_position)
    return clues[k].value if k < len(clues) else None


def _after_then_before(clues: list[Clue], pos: Position):
    if not clues:
        return None
    k = bisect_right(clues, pos, key=_position)
    if k < len(clues):
        return clues[k].value
    k = bisect_left(clues, pos, key=_position)
    return clues[k - 1].value if k else None


class _MachinePool:
    """The machines a post names (of the kinds a table wants), indexed once so that each figure's machine is found
    by bisection: a post of 16,000 runs takes linear time (D7), not one pass over every clue per figure.

    A log's device lines name the run they print: the last run before the figure, else the first after. Headings
    and lines name the machine of the tables that follow them: the machines named since the previous table (one,
    or several names: ambiguous), else the last one named before. Named only after the table, a machine counts
    when the post names no other one (a heading after a table never names it)."""

    def __init__(self, clues: list[Clue], previous_table=lambda index: -1, section=lambda index: 0,
                 device_lists: Sequence[Position] = ()):
        self.stretch_start = lambda pos: previous_table(pos[0])  # the figure table before a clue's piece
        self.section = section  # the section of a piece (a heading opens one)
        self.device_lists = device_lists  # where the post prints a device list, of any kind (another run's log)
        self.devices = [c for c in clues if c.value.source == "device"]
        self.device_pos = [c.pos for c in self.devices]
        self.named = [c for c in clues if c.value.source != "device"]
        self.named_pos = [c.pos for c in self.named]
        # per named clue: the index of the nearest named clue before it with another name (-1 when none), so that
        # "one name or several since position P" is one comparison
        other_before: list[int] = []
        previous_name, previous_other = None, -1
        for k, clue in enumerate(self.named):
            name = clue.value.name
            if k and previous_name != name:
                previous_other = k - 1
            other_before.append(previous_other)
            previous_name = name
        self.other_before = other_before

    # Asked only when nothing is named before a figure: computed then, once.
    @cached_property
    def names(self) -> list[str]:
        return list(dict.fromkeys(c.value.name for c in self.named))

    @cached_property
    def one_device_machine(self) -> bool:
        return len({c.value.name for c in self.devices}) == 1

    @cached_property
    def any_line(self) -> bool:
        return any(c.value.source == "line" for c in self.named)

    def machine_for(self, pos: Position, since: Position, until: Position) -> tuple[Machine | None, str | None]:
        if not self.devices and not self.named:
            return None, None
        k = bisect_left(self.device_pos, pos)
        h = bisect_left(self.named_pos, pos)
        lo = bisect_right(self.named_pos, since)
        last = h - 1
        # the run's own block first: its device list, else the one machine named in it (a heading "RTX 4090
        # comparison" over a log that prints no device names the machine, not the device list of the run before)
        if k and self.device_pos[k - 1] > since:
            return self.devices[k - 1].value, None
        if lo <= last:
            if self.other_before[last] >= lo:
                return None, AMBIGUOUS_HARDWARE.format(", ".join(self._names_between(lo, last)))
            return self.named[last].value, None
        if k:
            return self.devices[k - 1].value, None
        if h:
            # a run's log printed since that naming (its devices another machine's, maybe of a CPU-backend row's
            # other host) makes it stale: "On my Ryzen-7950X test system" in a PR's description names none of the
            # CPU tables the replies post after their own GPU logs (issue 19)
            d = bisect_right(self.device_lists, self.named_pos[last])
            if d < len(self.device_lists) and self.device_lists[d] < pos:
                return None, None
            # the machines named together before an earlier table: one name, or ambiguous (as for that table)
            start = bisect_right(self.named_pos, (self.stretch_start(self.named_pos[last]), 1 << 30))
            if self.other_before[last] >= start:
                return None, AMBIGUOUS_HARDWARE.format(", ".join(self._names_between(start, last)))
            return self.named[last].value, None
        if self.devices:
            # a device list printed after the figure names its run only before the next table (the log pasted
            # under its table), or when every list of the post names the same machine
            first = self.devices[k] if k < len(self.devices) else None
            if first is not None and (first.pos < until or self.one_device_machine):
                return first.value, None
            return None, None
        if not self.any_line:
            return None, None
        if len(self.names) > 1:
            return None, AMBIGUOUS_HARDWARE.format(", ".join(self.names[:5]))
        # named only under a later heading: that section's machine, not this table's ("### Jetson Nano" table,
        # then "### Intel i7-13700T": the i7 never names the table above its heading, issue 19)
        if self.section(self.named[0].pos[0]) != self.section(pos[0]):
            return None, None
        # and only before the next figure (a table's trailing text, never a later run's or a later reply's: "You
        # didn't say what your CPU was, so here another reference point from me ... (Ryzen-7950X)")
        first = self.named[0].pos
        if first >= until:
            return None, None
        # and in the table's trailing words ("That was an RTX 4090."), not further down a thread pasted whole (a
        # later reply's "ARM_NEON on an M2-Max CPU" under another user's CPU table, issue 19)
        if first[0] > pos[0] + _TRAILING_PIECES or first[1] >= _TRAILING_LINES:
            return None, None
        return self.named[0].value, None

    def _names_between(self, lo: int, last: int) -> list[str]:
        """Up to five of the distinct names of the named clues lo..last, in reading order (bounded work)."""
        names: dict[str, None] = {}
        k = last
        for _ in range(32):
            if k < lo or len(names) >= 5:
                break
            names.setdefault(self.named[k].value.name)
            k = self.other_before[k]
        return list(reversed(names))


def _selection_key(options: dict | None) -> tuple:
    if not options:
        return ()
    return tuple((k, str(options[k])) for k in ("sm", "main_gpu", "dev", "ts") if k in options)


def _integrated(line: str) -> bool:
    """A Vulkan device line's `uma: 1`: ggml-vulkan sets uma for an integrated GPU (device->uma =
    deviceType == eIntegratedGpu, ggml/src/ggml-vulkan/ggml-vulkan.cpp) and registers it as
    GGML_BACKEND_DEVICE_TYPE_IGPU."""
    return "uma: 1" in line


def _wanted_kind(backend: str | None) -> str | None:
    """The kind of machine a llama-bench row's backend ran on ("CPU" -> the processor); None when unknown."""
    if not backend:
        return None
    return "cpu" if " ".join(backend.lower().split()) in _CPU_BACKENDS else "gpu"


def _position(clue: Clue) -> Position:
    return clue.pos


# ============================================================================================ the records
def new_record(ctx: PostContext, quote: str, **fields) -> dict:
    """A record v1 with provenance filled in, the fields given (as `_record` takes them), the others unknown."""
    return _record(ctx, quote, **fields)


_NO_LENGTHS = (None, None, None)


def _record(ctx: PostContext, quote: str, *, hardware=None, model=None, quantization=None, software=None,
            version=None, options=None, lengths=_NO_LENGTHS, users=None, figure=None, procedure=None, phase=None,
            value=None, stddev=None) -> dict:
    """A record v1, built at once (the fields in record order; what is not given is unknown).

    `software`: the name of the software that printed the figure, as its reader knows it (None: unknown).

    `hardware`: the machine's name, or the record's whole hardware block when the source states more."""
    return {
        "source": {"url": ctx.permalink, "retrieved_at": ctx.retrieved_at, "published_at": ctx.published_at,
                   "author": ctx.author, "quote": quote},
        "hardware": hardware if isinstance(hardware, dict) else {"name": hardware},
        "model": model if model is not None else {"name": None, "params_b": None, "file_size_gb": None},
        "quantization": quantization,
        "software": {"name": software, "version": version, "options": options if options is not None else {}},
        "lengths": {"prompt_tokens": lengths[0], "generated_tokens": lengths[1], "context_depth": lengths[2]},
        "concurrency": {"users": users, "figure": figure},
        "nature": {"kind": "measured", "procedure": procedure},
        "phase": phase,
        "tokens_per_second": value,
        "stddev": stddev,
    }


def _lengths(shape: lb.TestShape | None) -> tuple:
    return (shape.prompt_tokens, shape.generated_tokens, shape.context_depth) if shape else _NO_LENGTHS


def model_name(label: str | None, params_b: float | None, protocol: dict, files: Sequence[str] = ()) -> str | None:
    """llama-bench's type label, or the name the source file's protocol gives it.

    The label says little ("llama 7B" is Llama 2 7B, but also Mistral 7B and CodeLlama 7B), so the alias applies
    only when the parameter count is the protocol model's (`params_b`), and, when the run's model files are known
    (`-m` in the post's command) and the protocol gives a `model_file_pattern`, only when one of them matches it.
    """
    if not label:
        return None
    if "?B" in label:
        # llama-bench prints "gpt-oss ?B" for a size its build does not know, for the 20B and the 120B file alike:
        # no identity; the parameter count the row prints tells the files apart (issue 19)
        return label.replace("?B", f"{params_b:g}B params") if params_b else None
    aliases = {k.lower(): v for k, v in (protocol.get("model_aliases") or {}).items()}
    alias = aliases.get(label.lower())
    if alias is None:
        return label
    expected = protocol.get("params_b")
    if expected is not None and (params_b is None or abs(params_b - expected) > 0.005 * expected):
        return label
    pattern = protocol.get("model_file_pattern")
    if pattern and files and not any(re.search(pattern, f, re.I) for f in files):
        return label
    return alias


# The options that say which devices a run used (machines.select_devices), as a command line gives them; a list
# ("-sm none,layer": one run per value) says nothing of a single row and is left to the table's own columns.
_RUN_ARGS = {"-sm": "sm", "--split-mode": "sm", "-mg": "main_gpu", "--main-gpu": "main_gpu", "-dev": "dev",
             "--device": "dev", "-ts": "ts", "--tensor-split": "ts"}


def command_run_options(command: str | None) -> dict:
    """{"sm": "none", "dev": "CUDA1", …} from a command line's -sm/-mg/-dev/-ts (single values only)."""
    if not command or "-" not in command:
        return {}
    tokens = command.split()
    options = {}
    for k, token in enumerate(tokens[:-1]):
        key = _RUN_ARGS.get(token)
        if key and "," not in tokens[k + 1]:
            options[key] = tokens[k + 1].strip("\"'")
    return options


_MODEL_FILES = re.compile(r"(?:^|\s)(?:-m|--model)\s+(\"[^\"]+\"|'[^']+'|\S+)")


def model_files(command: str | None) -> list[str]:
    """The model files a llama-bench command line names (`-m a.gguf -m b.gguf`)."""
    return [f.strip('"\'') for f in _MODEL_FILES.findall(command or "")]


@dataclass
class ModelRow:
    """What one llama-bench row says about the model file."""

    label: str | None
    quant: str | None
    params_b: float | None
    file_size_gb: float | None
    backend: str | None


# ================================================================================== numbers no column holds
_INT_LIMIT = 2 ** 63  # SQLite's INTEGER and PostgreSQL's bigint hold less
_FLOAT_FIELDS = (("tokens_per_second", None), ("stddev", None), ("model", "params_b"), ("model", "file_size_gb"),
                 ("hardware", "memory_bandwidth_gbs"))
_INT_FIELDS = (("lengths", "prompt_tokens"), ("lengths", "generated_tokens"), ("lengths", "context_depth"),
               ("concurrency", "users"))


def carry_quote_headers(candidates: list[Candidate], pieces: Sequence[Piece]) -> None:
    """Each candidate quoting one row of a table gets that table's header line as `source.quote_header`, so a
    footnote can show which column holds the figure without reading the page again (issue 17).

    Keyed by the row's text as quoted: every reader (llama-bench, batched-bench, scoreboard, sweep-bench...) quotes
    its row as the Table holds it. A row found under two different headers gets none (never a guessed header)."""
    headers: dict[str, str | None] = {}
    for piece in pieces:
        table = piece.table
        if piece.kind != "table" or table is None or not table.header_quote:
            continue
        header = None if quote_header_problem(table.header_quote) else table.header_quote
        for quote in table.quotes:
            headers[quote] = header if headers.get(quote, header) == header else None
    if not headers:
        return
    for candidate in candidates:
        source = candidate.record["source"]
        if header := headers.get(source["quote"]):
            source["quote_header"] = header


def refuse_unstorable_numbers(candidate: Candidate) -> None:
    """A number no database column can hold (a figure of 400 digits reads as infinity; a file may say "nan" or
    1e20 tokens) becomes unknown, and the candidate a rejection naming the field: never stored, never a crash."""
    record = candidate.record
    for block, key in _FLOAT_FIELDS:
        holder = record if key is None else record[block]
        name = block if key is None else key
        value = holder.get(name)
        if value is not None and value - value != 0:
            holder[name] = None
            candidate.reasons.append(f"{block if key is None else f'{block}.{key}'}: {value} is not a finite number")
    for block, key in _INT_FIELDS:
        holder = record[block]
        value = holder[key]
        if value is not None and not -_INT_LIMIT < value < _INT_LIMIT:
            holder[key] = None
            candidate.reasons.append(f"{block}.{key}: {value} is too large for a count")
