from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from depthfinder.cli.reference import DOCUMENTS, REGENERATE, build_records_reference, build_reference, cli_flags
from depthfinder.expectations.table.datasets import get_dataset
from depthfinder.flows.config import RunConfig, load_run_config

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _rows(document: str, section: str) -> dict[str, list[str]]:
    """The table of `## section` as {setting: [type, default, flag, description]}."""
    body = document.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split(" | ") for line in body.splitlines() if line.startswith("| `")]
    return {cells[0].strip(" `"): [cell.strip() for cell in cells[1:]] for cells in rows}


def test_committed_documents_are_up_to_date() -> None:
    for name, build in DOCUMENTS.items():
        assert (DOCS / name).is_file(), f"docs/{name} is missing; run: {REGENERATE}"
        assert (DOCS / name).read_text(encoding="utf-8") == build(), (
            f"docs/{name} is stale (a config field, CLI flag or record field changed); run: {REGENERATE}"
        )


def test_every_field_a_summary_writes_is_documented() -> None:
    from depthfinder.flows.summary import RunSummary

    document = build_records_reference()
    written = RunSummary(data_hash="x").to_dict()
    assert set(_record_rows(document, "RunSummary")) == set(written)
    for record in ("Candidate", "Cost", "Decision", "Halving", "Rung", "CheckResult", "AuditReport"):
        assert _record_rows(document, record), record


def test_a_decision_is_documented_as_it_is_written_its_settings_keys_and_not_the_rule_it_holds() -> None:
    from depthfinder.selection.rule import choose_depth
    from depthfinder.selection.settings import SelectionRule
    from tests.selection.test_rule import SWEEP

    written = choose_depth(SWEEP, SelectionRule()).to_dict()

    assert _record_rows(build_records_reference(), "Decision") == list(written)
    assert "settings" not in written and "## SelectionRule" not in build_records_reference()


def _record_rows(document: str, record: str) -> list[str]:
    body = document.split(f"\n## {record}\n", 1)[1].split("\n## ", 1)[0]
    return [line.split(" | ")[0].strip("| `") for line in body.splitlines() if line.startswith("| `")]


def test_every_field_of_every_section_has_a_row() -> None:
    document = build_reference()

    for section, field in RunConfig.model_fields.items():
        settings = field.annotation.model_fields
        parts = {name: setting.annotation for name, setting in settings.items()
                 if isinstance(setting.annotation, type) and issubclass(setting.annotation, BaseModel)}
        assert list(_rows(document, section)) == [name for name in settings if name not in parts], section
        for name, part in parts.items():  # a part of a section has a table of its own
            assert list(_rows(document, f"{section}.{name}")) == list(part.model_fields), f"{section}.{name}"


def test_example_yaml_loads_into_a_valid_run_config(tmp_path: Path) -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", build_reference(), flags=re.DOTALL)
    assert len(blocks) == 1
    path = tmp_path / "run.yaml"
    path.write_text(blocks[0], encoding="utf-8")

    config = load_run_config(path, {})

    assert isinstance(config, RunConfig)
    assert config.audit.drop == ["conflicts", "leaks"]  # a section's settings are read, not dropped
    get_dataset(config.data.dataset)  # the example names a real built-in dataset


def test_types_show_choices_bounds_and_yaml_defaults() -> None:
    document = build_reference()
    sweep, train, data = _rows(document, "sweep"), _rows(document, "train"), _rows(document, "data")

    assert sweep["rule"][0] == "one of: tolerance, ratio, pareto"
    assert sweep["depths"][:2] == ["list of int, at least 1 or none", "`null`"]
    assert sweep["families"][0] == "list, each one of: scratch, pretrained, at least 1 or none"
    assert sweep["max_params"][:2] == ["int > 0 or none", "`null`"]
    assert train["max_epochs"][0] == "int ≥ 1"
    assert train["warmup_fraction"][0] == "0 ≤ float < 1"
    assert train["class_weights"][0] == "one of: auto, 'on', 'off'"  # bare on/off would be YAML booleans
    assert _rows(document, "registry")["workdir"][:2] == ["path", "`.depthfinder`"]
    assert data["path"][1] == "required unless `dataset` is given"
    assert data["dataset"][1] == "required unless `path` is given"
    assert "Give exactly one of `path` and `dataset`" in document


def test_flags_come_from_the_cli() -> None:
    flags = cli_flags()

    assert flags[("data", "path")] == ["--data"]
    assert flags[("sweep", "max_latency_ms")] == ["--max-latency-ms"]
    assert flags[("audit", "drop")] == ["--drop-conflicts", "--drop-empty", "--drop-leaks"]
    assert ("model", "d_model") not in flags  # no flag: set it in the YAML file
    assert not any(flag in {"--config", "--summary-json"} for names in flags.values() for flag in names)
