"""PostgreSQL's lexical rules, enough to know what a statement's words are: `tpsdb query` checks them.

A regular expression over SQL text is fooled by what the server reads differently (review 2026-12-01, D6): block
comments nest (`/* /* */ select */ COPY …` is a COPY), a comment may sit between a name and its `(`, identifiers
may be quoted (`"pg_read_file"`) or written in Unicode escapes (`U&"\\0070g_read_file"`, with a `UESCAPE` clause),
strings may be dollar-quoted (`$x$ … $x$`) or take backslash escapes (`E'…\\'…'`). This scanner follows
PostgreSQL's own scanner (src/backend/parser/scan.l) on each of these, and assumes `standard_conforming_strings`
is on (the query sets it so for its session). Text it cannot end cleanly (an open comment, string or quoted name)
is an error: what the server would do with it is not guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Token", "LexError", "tokens"]


class LexError(ValueError):
    """The text ends inside a comment, a string or a quoted identifier, or holds a malformed escape."""


@dataclass(frozen=True)
class Token:
    kind: str  # "name" (an identifier or keyword: `value` is the name as the server sees it), "string", "other"
    value: str
    quoted: bool = False  # a name written in double quotes (never a keyword)


_SPACE = " \t\n\r\f\v"
# scan.l: ident_start [A-Za-z\200-\377_], ident_cont [A-Za-z\200-\377_0-9\$]; every non-ASCII character counts.
_IDENT = re.compile(r"[A-Za-z_\u0080-\U0010ffff][A-Za-z_0-9$\u0080-\U0010ffff]*")
_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_\u0080-\U0010ffff][A-Za-z_0-9\u0080-\U0010ffff]*)?\$")
_PARAM = re.compile(r"\$[0-9]+")
_NUMBER = re.compile(r"[0-9.]+")


def _downcase(name: str) -> str:
    """An unquoted name as the server stores it: ASCII letters lowered (downcase_identifier, UTF-8 databases)."""
    return name.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _skip_space_and_comments(sql: str, i: int) -> int:
    n = len(sql)
    while i < n:
        if sql[i] in _SPACE:
            i += 1
        elif sql.startswith("--", i):
            end = min((p for p in (sql.find("\n", i), sql.find("\r", i)) if p >= 0), default=n)
            i = end
        elif sql.startswith("/*", i):
            depth, i = 1, i + 2
            while depth:
                if i >= n:
                    raise LexError("the text ends inside a /* comment */")
                if sql.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif sql.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        else:
            break
    return i


def _quoted(sql: str, i: int, quote: str, backslash: bool = False) -> tuple[str, int]:
    """The text between `quote`s starting at sql[i] (the opening quote), a doubled quote standing for one; with
    `backslash`, `\\x` also escapes x (E'…' strings; only which character ends the string matters here)."""
    n, out, i = len(sql), [], i + 1
    while True:
        if i >= n:
            raise LexError("the text ends inside a quoted " + ("name" if quote == '"' else "string"))
        c = sql[i]
        if backslash and c == "\\" and i + 1 < n:
            out.append(sql[i + 1])
            i += 2
        elif c == quote:
            if sql.startswith(quote, i + 1):
                out.append(quote)
                i += 2
            else:
                return "".join(out), i + 1
        else:
            out.append(c)
            i += 1


def _unicode_unescape(text: str, escape: str) -> str:
    """A U&"…" name's escapes: ESC+XXXX, ESC+ +XXXXXX, ESC ESC (scan.l's process_integer_literal's sibling)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c != escape:
            out.append(c)
            i += 1
        elif text.startswith(escape, i + 1):
            out.append(escape)
            i += 2
        elif re.fullmatch(r"[0-9A-Fa-f]{4}", text[i + 1:i + 5]):
            out.append(chr(int(text[i + 1:i + 5], 16)))
            i += 5
        elif text[i + 1:i + 2] == "+" and re.fullmatch(r"[0-9A-Fa-f]{6}", text[i + 2:i + 8]):
            code = int(text[i + 2:i + 8], 16)
            if code > 0x10FFFF:
                raise LexError("invalid Unicode escape value")
            out.append(chr(code))
            i += 8
        else:
            raise LexError("invalid Unicode escape in a U& name")
    return "".join(out)


def _uescape(sql: str, i: int) -> tuple[str, int]:
    """After a U&"…" name or U&'…' string: an optional `UESCAPE 'c'` clause; returns the escape character."""
    j = _skip_space_and_comments(sql, i)
    word = _IDENT.match(sql, j)
    if not word or _downcase(word.group()) != "uescape":
        return "\\", i
    j = _skip_space_and_comments(sql, word.end())
    if j >= len(sql) or sql[j] != "'":
        raise LexError("UESCAPE must be followed by a simple string literal")
    escape, j = _quoted(sql, j, "'")
    if len(escape) != 1 or escape in "0123456789abcdefABCDEF+'\"" or escape in _SPACE:
        raise LexError("invalid Unicode escape character")
    return escape, j


def tokens(sql: str) -> list[Token]:
    """The statement's tokens, comments and white space dropped. Raises LexError."""
    out: list[Token] = []
    i, n = 0, len(sql)
    while True:
        i = _skip_space_and_comments(sql, i)
        if i >= n:
            return out
        c = sql[i]
        two = sql[i:i + 2]
        if two[:1] in "uU" and sql.startswith("&", i + 1) and sql[i + 2:i + 3] in ("'", '"'):
            quote = sql[i + 2]
            text, i = _quoted(sql, i + 2, quote)
            escape, i = _uescape(sql, i)
            if quote == '"':
                out.append(Token("name", _unicode_unescape(text, escape), quoted=True))
            else:
                out.append(Token("string", text))
        elif two[:1] in "eE" and two[1:] == "'":
            text, i = _quoted(sql, i + 1, "'", backslash=True)
            out.append(Token("string", text))
        elif two[:1] in "bBxXnN" and two[1:] == "'":
            text, i = _quoted(sql, i + 1, "'")
            out.append(Token("string", text))
        elif c == "'":
            text, i = _quoted(sql, i, "'")
            out.append(Token("string", text))
        elif c == '"':
            text, i = _quoted(sql, i, '"')
            if not text:
                raise LexError("a zero-length quoted name")
            out.append(Token("name", text, quoted=True))
        elif c == "$" and (tag := _DOLLAR_TAG.match(sql, i)):
            end = sql.find(tag.group(), tag.end())
            if end < 0:
                raise LexError(f"the text ends inside a {tag.group()}-quoted string")
            out.append(Token("string", sql[tag.end():end]))
            i = end + len(tag.group())
        elif c == "$" and (param := _PARAM.match(sql, i)):
            out.append(Token("other", param.group()))
            i = param.end()
        elif word := _IDENT.match(sql, i):
            out.append(Token("name", _downcase(word.group())))
            i = word.end()
        elif number := _NUMBER.match(sql, i):
            # digits only: letters after them start a name, which can only make the check see more names
            out.append(Token("other", number.group()))
            i = number.end()
        else:
            # one character at a time: an operator's `--` or `/*` starts a comment, as in scan.l
            out.append(Token("other", c))
            i += 1
