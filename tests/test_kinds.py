"""The registry of source kinds, and what every source file shares (`enabled`)."""

from conftest import run_cli
from tpsdb.db import make_engine
from tpsdb.kinds import kind_names, load_sources
from tpsdb.refresh import due_sources


def test_every_module_of_the_kinds_package_is_a_registered_kind():
    assert kind_names() == ["file", "github_discussion", "github_issue", "json_api", "peer_dataset", "repo_file"]


def test_an_unknown_kind_is_refused_naming_the_known_ones(tmp_path):
    (tmp_path / "x.toml").write_text('key = "x"\nurl = "https://example.org/x"\nkind = "forum"\n', encoding="utf-8")
    result = run_cli("sources", "--sources-dir", str(tmp_path), db=tmp_path / "x.sqlite", check=False)
    assert result.stderr.strip() == ("error: x.toml: kind: 'forum' is not one of file, github_discussion, github_issue, "
                                     "json_api, peer_dataset, repo_file")


def test_a_disabled_source_is_never_due_but_still_listed(tmp_path):
    run_cli("init", "--no-seed", db=tmp_path / "d.sqlite")
    specs = load_sources()
    due = due_sources(make_engine(f"sqlite:///{tmp_path / 'd.sqlite'}"), specs)
    assert "llamacpp-pr-4766" in specs and not specs["llamacpp-pr-4766"].enabled
    assert {"llamacpp-15013", "llamacpp-16578", "llamacpp-4167"} <= set(due)
    assert set(due) == {key for key, spec in specs.items() if spec.enabled}  # never run: every enabled one
