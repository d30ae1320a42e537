"""The six-field validator: each field missing or malformed gives exactly one reason, with its exact code."""

import copy

import pytest

from tpsdb.record import GIB_IN_GB, ceiling_tokens_per_second, named_quantization, validate


def reasons_after(record, change):
    bad = copy.deepcopy(record)
    change(bad)
    return validate(bad).reasons


def test_valid_record_is_accepted(record):
    outcome = validate(record)
    assert outcome.accepted, outcome.reasons
    assert outcome.record.quantization == "MXFP4"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        # 1. model
        (lambda r: r["model"].pop("file_size_gb"), "model.file_size_gb: missing"),
        (lambda r: r["model"].pop("params_b"), "model.params_b: missing"),
        (lambda r: r["model"].update(name=None), "model.name: missing"),
        # 2. quantization
        (lambda r: r.update(quantization="4-bit"), 'quantization: not a named format ("4-bit")'),
        (lambda r: r.update(quantization="8 bits"), 'quantization: not a named format ("8 bits")'),
        (lambda r: r.pop("quantization"), "quantization: missing"),
        # 3. software
        (lambda r: r["software"].pop("version"), "software.version: missing"),
        (lambda r: r["software"].update(name=""), "software.name: missing"),
        # 4. lengths
        (lambda r: r["lengths"].pop("generated_tokens"), "lengths.generated_tokens: missing"),
        (lambda r: r["lengths"].update(generated_tokens=0), "lengths.generated_tokens: 0 for a generation figure"),
        (lambda r: (r.update(phase="prompt"), r["lengths"].pop("prompt_tokens")), "lengths.prompt_tokens: missing"),
        # 5. concurrency
        (lambda r: r["concurrency"].pop("figure"), "concurrency.figure: missing"),
        (lambda r: r["concurrency"].pop("users"), "concurrency.users: missing"),
        (lambda r: r["concurrency"].update(users=0), "concurrency.users: less than 1"),
        # 6. nature
        (lambda r: r["nature"].pop("procedure"), "nature.procedure: missing"),
        (lambda r: r["nature"].pop("kind"), "nature.kind: missing"),
        (lambda r: r.update(nature={"kind": "computed", "inputs": {"bandwidth_gbs": 273}}), "nature.formula: missing"),
        # provenance and value
        (lambda r: r["source"].update(retrieved_at="2999-01-01"), "source.retrieved_at: in the future"),
        (lambda r: r["source"].pop("url"), "source.url: missing"),
        (lambda r: r["source"].update(url="github.com/x"), "source.url: not an http(s) URL"),
        (lambda r: r["source"].pop("quote"), "source.quote: missing"),
        (lambda r: r["source"].update(quote="no number here"), "source.quote: does not show the value 59.02"),
        (lambda r: r["hardware"].pop("name"), "hardware.name: missing"),
        (lambda r: r.pop("phase"), "phase: missing"),
        (lambda r: r.update(extra=1), 'record: unknown field "extra"'),
    ],
)
def test_each_defect_gives_exactly_its_reason(record, change, code):
    assert reasons_after(record, change) == [code]


def test_all_reasons_are_reported_at_once(record):
    reasons = reasons_after(record, lambda r: (r["software"].pop("version"), r["model"].pop("file_size_gb")))
    assert reasons == ["model.file_size_gb: missing", "software.version: missing"]


def test_wrong_types_name_the_field(record):
    reasons = reasons_after(record, lambda r: r["lengths"].update(generated_tokens="many"))
    assert len(reasons) == 1 and reasons[0].startswith("lengths.generated_tokens: ")
    assert reasons_after(record, lambda r: r["concurrency"].update(figure="total"))[0].startswith("concurrency.figure: ")


class TestUnits:
    def test_gib_string_is_converted_to_decimal_gb(self, record):
        record["model"]["file_size_gb"] = "59.02 GiB"
        outcome = validate(record)
        assert outcome.accepted, outcome.reasons
        assert outcome.record.model.file_size_gb == round(59.02 * GIB_IN_GB, 2)  # tpsdb.units: two decimals of GB

    def test_mib_and_gb_strings(self, record):
        record["model"].update(params_b=6.74, file_size_gb="3950 MiB")
        assert validate(record).record.model.file_size_gb == 4.14
        record["model"].update(params_b=116.83, file_size_gb="63.37 GB")
        assert validate(record).record.model.file_size_gb == 63.37

    def test_params_in_millions_are_converted_or_refused(self, record):
        record["model"]["params_b"] = "116830 M"
        assert validate(record).record.model.params_b == pytest.approx(116.83)
        record["model"]["params_b"] = 116830
        assert validate(record).reasons == ["model.params_b: 116830 is not in billions (looks like millions or a raw count)"]

    def test_unknown_unit_is_refused(self, record):
        record["model"]["file_size_gb"] = "59 gigs"
        assert validate(record).reasons == ['model.file_size_gb: unknown unit in "59 gigs" (use GB, GiB, MB or MiB)']

    def test_size_in_mb_given_as_gb_is_implausible(self, record):
        record["model"]["file_size_gb"] = 63370  # MB written where GB belong
        assert validate(record).reasons == [
            "model.file_size_gb: 63370 GB for 116.83 B parameters is implausible (unit?)"
        ]


class TestCeiling:
    def test_arithmetic(self):
        assert ceiling_tokens_per_second(273, 3.79) == pytest.approx(72.03, abs=0.01)
        # mixture of experts: only the active share of the file is read per token
        assert ceiling_tokens_per_second(273, 63.37, 116.83, 5.13) == pytest.approx(273 / (63.37 * 5.13 / 116.83))

    def test_above_ceiling_is_rejected_when_both_inputs_are_known(self, record):
        record["hardware"]["memory_bandwidth_gbs"] = 273
        record["model"].update(name="Llama 2 7B", params_b=6.74, file_size_gb=3.79)
        record["quantization"] = "Q4_0"
        record["tokens_per_second"] = 80.0
        record["source"]["quote"] = "| llama 7B Q4_0 | tg128 | 80.00 ± 0.1 |"
        assert validate(record).reasons == ["tokens_per_second: above_ceiling: 80 > 72.03, the maximum computed from "
                                            "273 GB/s ÷ 3.79 GB read per token (dense: the whole file); for a mixture "
                                            "of experts set model.active_params_b"]
        record["tokens_per_second"] = 57.0
        record["source"]["quote"] = "| llama 7B Q4_0 | tg128 | 57.00 ± 0.1 |"
        assert validate(record).accepted

    def test_ceiling_uses_the_reference_bandwidth(self, record):
        record["model"].update(name="Llama 2 7B", params_b=6.74, file_size_gb=3.79)
        record["quantization"] = "Q4_0"
        record["tokens_per_second"] = 80.0
        record["source"]["quote"] = "80.0"
        lookup = {"NVIDIA DGX Spark": 273.0}.get
        [reason] = validate(record, bandwidth_of=lookup).reasons
        assert reason.startswith("tokens_per_second: above_ceiling: 80 > 72.03, the maximum computed from 273 GB/s")
        assert validate(record, bandwidth_of=lambda name: None).accepted  # unknown bandwidth: no verdict

    def test_aggregate_figures_are_not_held_to_the_single_user_ceiling(self, record):
        record["hardware"]["memory_bandwidth_gbs"] = 273
        record["concurrency"] = {"users": 32, "figure": "aggregate"}
        record["tokens_per_second"] = 614.82
        record["source"]["quote"] = "|   512 |     32 |   32 |  17408 |    4.110 |  3986.29 |    1.666 |   614.82 |"
        assert validate(record).accepted


@pytest.mark.parametrize(("given", "expected"), [("q4_k_m", "Q4_K_M"), ("MXFP4", "MXFP4"), ("nvfp4", "NVFP4"),
                                                  ("F16", "F16"), ("IQ4_XS", "IQ4_XS"), ("4-bit", None), ("int4?", None)])
def test_quantization_names(given, expected):
    assert named_quantization(given) == expected


# ------------------------------------------------------------------------------ the reliability probe's defects
@pytest.mark.parametrize(("change", "field"), [
    (lambda r: r.update(tokens_per_second=float("inf")), "tokens_per_second"),  # 1e309 reads as inf
    (lambda r: (r.update(tokens_per_second=float("nan")), r["source"].update(quote="result: nan t/s")),
     "tokens_per_second"),
    (lambda r: r.update(stddev=float("nan")), "stddev"),
    (lambda r: r["model"].update(params_b=float("nan")), "model.params_b"),
    (lambda r: r["model"].update(active_params_b=float("inf")), "model.active_params_b"),
    (lambda r: r["hardware"].update(memory_bandwidth_gbs=float("inf")), "hardware.memory_bandwidth_gbs"),
    (lambda r: r["hardware"].update(memory_gb=float("nan")), "hardware.memory_gb"),
    (lambda r: r["software"]["options"].update(ngl=float("nan")), "software.options.ngl"),
])
def test_d3_numbers_that_are_not_finite_are_refused(record, change, field):
    assert reasons_after(record, change) == [f"{field}: not a finite number"]


@pytest.mark.parametrize(("change", "code"), [
    (lambda r: r["hardware"].update(memory_gb=-128), "hardware.memory_gb: not positive"),
    (lambda r: r["hardware"].update(gpu_cores=-6), "hardware.gpu_cores: not positive"),
    (lambda r: r["hardware"].update(memory_bandwidth_gbs=0), "hardware.memory_bandwidth_gbs: not positive"),
    (lambda r: r.update(stddev=-0.17), "stddev: negative"),
    (lambda r: r["concurrency"].update(users=10**19), "concurrency.users: 1e+19 is implausible (more than 1e+06)"),
    (lambda r: r["lengths"].update(generated_tokens=10**20),
     "lengths.generated_tokens: 1e+20 is implausible (more than 1e+09)"),
    (lambda r: r["lengths"].update(generated_tokens=1e20), "lengths.generated_tokens: not a plausible count"),
    (lambda r: r["lengths"].update(generated_tokens="32"), "lengths.generated_tokens: input should be a valid integer"),
    (lambda r: r["concurrency"].update(users=True), "concurrency.users: input should be a valid integer"),
    (lambda r: r.update(tokens_per_second=True), "tokens_per_second: input should be a valid number"),
    (lambda r: r.update(tokens_per_second="59.02"), "tokens_per_second: input should be a valid number"),
    (lambda r: r["model"].update(params_b=True), "model.params_b: not a number or a string with its unit"),
    (lambda r: r["model"].update(file_size_gb=2e5), "model.file_size_gb: 200000 is implausible (more than 100000)"),
    (lambda r: r["model"].update(name="Llama 2 7B", params_b=6738, file_size_gb=3.79),
     "model.params_b: 6738 is not in billions for a 3.79 GB file (looks like millions)"),
])
def test_d3_numbers_are_typed_and_in_range(record, change, code):
    assert reasons_after(record, change) == [code]


def test_d3_whole_floats_count_and_are_stored_as_integers(record):
    record["concurrency"]["users"] = 1.0
    assert validate(record).record.concurrency.users == 1


@pytest.mark.parametrize("value", [5, 9.02, 2, 0.1, 3, 116.83, 59.03])
def test_d4_quote_needs_the_whole_number(record, value):
    # the README quote: "| … | 59.02 GiB | 116.83 B | CUDA | 99 | 2048 | 1 | 0 | tg32 | 59.02 ± 0.17 |"
    record["tokens_per_second"] = value
    assert validate(record).reasons == [f"source.quote: does not show the value {value:g}"]


@pytest.mark.parametrize(("value", "quote"), [
    (59.02, "59.02 ± 0.17"), (59.0, "59.02 ± 0.17"), (59, "| tg32 | 59.02 ± 0.17 |"),  # the value is rounded
    (59.02, "59.0249 t/s"), (1311.72, "1,311.72 t/s"), (1311.72, "1 311,72 t/s"), (42.0, "42,0 tokens/s"),
    (1000, "1e3 t/s"), (42, "速度为42个token"), (42, "it ran at 42t/s."), (8, "batch 1,2,4,8"),
])
def test_d4_whole_numbers_as_people_write_them(record, value, quote):
    record["tokens_per_second"], record["source"]["quote"] = value, quote
    assert validate(record).accepted, validate(record).reasons


@pytest.mark.parametrize(("value", "quote"), [
    (311.72, "1,311.72 t/s"), (420, "42,0 tokens/s"), (3, "1e3 t/s"), (59.024, "59.02 t/s"), (32, "tg32: 7 t/s"),
    (6918, "llama.cpp b6918: 7 t/s"),
])
def test_d4_parts_of_a_number_are_not_the_number(record, value, quote):
    record["tokens_per_second"], record["source"]["quote"] = value, quote
    assert validate(record).reasons == [f"source.quote: does not show the value {value:g}"]


@pytest.mark.parametrize(("change", "code"), [
    (lambda r: r["source"].update(retrieved_at=0), "source.retrieved_at: not a date (write yyyy-mm-dd)"),
    (lambda r: r["source"].update(retrieved_at="0001-01-01", published_at=None),
     "source.retrieved_at: before 1990-01-01"),
    (lambda r: r["source"].update(published_at="1989-12-31"), "source.published_at: before 1990-01-01"),
    (lambda r: r["source"].update(via={"published_at": "2099-01-01"}), "source.via.published_at: in the future"),
    (lambda r: r["source"].update(url="https://example.com/x\n"), "source.url: not an http(s) URL"),
    (lambda r: r["source"].update(url="https://exa mple.com/x"), "source.url: not an http(s) URL"),
    (lambda r: r["source"].update(url="https://example.com/\x7f"), "source.url: not an http(s) URL"),
    (lambda r: r["source"].update(url="https://user:pass@evil.example/x"), "source.url: holds a user:password@"),
    (lambda r: r["source"].update(via={"url": "javascript:alert(1)"}), "source.via.url: not an http(s) URL"),
])
def test_d18_dates_and_urls(record, change, code):
    assert reasons_after(record, change) == [code]


@pytest.mark.parametrize("url", ["HTTPS://example.com/x", "Http://example.com", "https://medium.com/@user/post",
                                 "https://example.com/a?b=c#d"])
def test_d18_urls_that_are_fine(record, url):
    record["source"]["url"] = url
    assert validate(record).accepted


@pytest.mark.parametrize(("change", "code"), [
    (lambda r: r["source"].update(author="a\x00b"), "source.author: holds a NUL character"),
    (lambda r: r["hardware"].update(name="DGX\x00"), "hardware.name: holds a NUL character"),
    (lambda r: r["software"].update(options={"k": ["x", "\x00"]}), "software.options.k.1: holds a NUL character"),
    (lambda r: r["source"].update(author="\ud800"), "source.author: holds a lone surrogate (not Unicode text)"),
    (lambda r: r.update({"\x00": 1}), "record: a key holds a NUL character"),
])
def test_d22_nul_characters_and_lone_surrogates_are_refused_with_the_field(record, change, code):
    assert reasons_after(record, change) == [code]


@pytest.mark.parametrize(("header", "code"), [
    ("| a |\n| b |", "source.quote_header: more than one line"),
    ("| a |\u2028| b |", "source.quote_header: more than one line"),  # a line separator: a break to splitlines
    ("| a |\u2029| b |", "source.quote_header: more than one line"),
    ("   ", "source.quote_header: empty"),
    ("| a \x1b[31m|", "source.quote_header: holds a control character"),
    ("|" + "a" * 2000 + "|", "source.quote_header: longer than 2000 characters"),
])
def test_a_quote_header_is_one_line_of_bounded_text(record, header, code):
    """source.quote_header (optional: the header line of the table the quoted row is from)."""
    assert reasons_after(record, lambda r: r["source"].update(quote_header=header)) == [code]
    assert reasons_after(record, lambda r: r["source"].update(quote_header=["| a |"]))[0].startswith(
        "source.quote_header")
    fine = copy.deepcopy(record)
    fine["source"]["quote_header"] = "| model | size |\t t/s |"
    outcome = validate(fine)
    assert outcome.accepted and outcome.record.to_json_dict()["source"]["quote_header"] == "| model | size |\t t/s |"
    assert outcome.record.identity() == validate(record).record.identity()  # not part of the figure's identity
