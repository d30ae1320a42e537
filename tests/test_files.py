"""tpsdb.files: the one rule that says whether a stated size describes the reference's cited file."""

from tpsdb.files import SAME_FILE_TOLERANCE, cited_file, file_size_read, same_file
from tpsdb.units import size_gb


def test_llama_benchs_size_of_the_file_is_the_cited_file():
    """The article's Table 1 reads llama-bench's `3.56 GiB` Q4_0 Llama 2 7B rows as its 3.79 GB file."""
    assert same_file(size_gb("3.56 GiB"), 3.79)
    assert cited_file(3.82, "Q4_0", [("F16", 13.48), ("Q8_0", 7.16), ("Q4_0", 3.79)]) == 3.79
    assert file_size_read(3.82, "Q4_0", [("Q4_0", 3.79)]) == 3.79


def test_another_size_or_format_is_another_file():
    assert SAME_FILE_TOLERANCE == 0.02
    assert not same_file(4.0, 3.79) and not same_file(None, 3.79) and not same_file(3.79, None)
    assert cited_file(3.82, "Q4_1", [("Q4_0", 3.79)]) is None  # same size, another format
    assert file_size_read(4.25, "Q4_0", [("Q4_0", 3.79)]) == 4.25  # its own size: another file


def test_the_nearest_cited_file_is_chosen():
    assert cited_file(3.80, "Q4_0", [("Q4_0", 3.85), ("Q4_0", 3.79)]) == 3.79
