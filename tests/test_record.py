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
        assert outcome.record.model.file_size_gb == pytest.approx(59.02 * GIB_IN_GB, abs=1e-3)

    def test_mib_and_gb_strings(self, record):
        record["model"].update(params_b=6.74, file_size_gb="3950 MiB")
        assert validate(record).record.model.file_size_gb == pytest.approx(4.1419, abs=1e-3)
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
        assert validate(record).reasons == ["tokens_per_second: above_ceiling"]
        record["tokens_per_second"] = 57.0
        record["source"]["quote"] = "| llama 7B Q4_0 | tg128 | 57.00 ± 0.1 |"
        assert validate(record).accepted

    def test_ceiling_uses_the_reference_bandwidth(self, record):
        record["model"].update(name="Llama 2 7B", params_b=6.74, file_size_gb=3.79)
        record["quantization"] = "Q4_0"
        record["tokens_per_second"] = 80.0
        record["source"]["quote"] = "80.0"
        lookup = {"NVIDIA DGX Spark": 273.0}.get
        assert validate(record, bandwidth_of=lookup).reasons == ["tokens_per_second: above_ceiling"]
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
