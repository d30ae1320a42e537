"""tpsdb.memo: short texts are read once, long or odd ones every time, and the memo never grows past its bound."""

from __future__ import annotations

from tpsdb import memo
from tpsdb.collect import llamabench as lb


def _counted():
    calls: list = []

    @memo.short_text_memo
    def read(text):
        calls.append(text)
        return ("read", text)

    return read, calls


def test_a_short_text_is_read_once():
    read, calls = _counted()
    assert read("pp512") == read("pp512") == ("read", "pp512")
    assert calls == ["pp512"]


def test_a_long_text_is_read_every_time_and_not_kept():
    read, calls = _counted()
    long = "x" * (memo.SHORT + 1)
    read(long)
    read(long)
    assert calls == [long, long]
    assert read.cache_info().currsize == 0


def test_the_memo_keeps_at_most_its_bound():
    read, calls = _counted()
    for k in range(memo.ENTRIES + 50):
        read(f"cell {k}")
    assert read.cache_info().currsize == memo.ENTRIES
    read("cell 0")  # pushed out long ago: read again
    assert calls.count("cell 0") == 2


def test_tuples_of_texts_are_kept_other_values_are_read_directly():
    read, calls = _counted()
    read(("model", "t/s"))
    read(("model", "t/s"))
    assert calls == [("model", "t/s")]
    read(["model", "t/s"])  # a list is not hashable: read, never an error
    read(("model", 1))
    read(("model", 1))
    assert calls[1:] == [["model", "t/s"], ("model", 1), ("model", 1)]
    read(tuple("x" * (memo.SHORT + 1)))  # many short cells add up past the bound
    assert read.cache_info().currsize == 1


def test_a_header_changed_after_its_reading_is_read_anew():
    header = ["model", "size", "params", "backend", "test", "t/s"]
    assert lb.table_kind(header) == lb.LLAMA_BENCH
    header.remove("model")  # the memo holds a copy of the header, not the list
    assert lb.table_kind(header) == lb.SUMMARY
