from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from depthfinder.tracking import runs as tracking
from depthfinder.tracking.runs import (
    SOURCE_PACKAGES,
    code_version,
    create_sweep_run,
    flatten,
    resolve_tracking_uri,
    source_digest,
    start_child_run,
)


def test_relative_sqlite_uri_is_pinned_to_the_working_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)

    assert resolve_tracking_uri("sqlite:///mlflow.db") == f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert resolve_tracking_uri("sqlite:////abs/mlflow.db") == "sqlite:////abs/mlflow.db"
    assert resolve_tracking_uri("http://127.0.0.1:5000") == "http://127.0.0.1:5000"


def test_flatten_joins_nested_keys() -> None:
    assert flatten("", {"sweep": {"depths": [1, 2], "rule": {"tolerance": 0.01}}, "seed": 1}) == {
        "sweep.depths": [1, 2],
        "sweep.rule.tolerance": 0.01,
        "seed": 1,
    }


def test_child_runs_name_their_parent_explicitly(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sweep = create_sweep_run(uri, "exp", "model", "sweep-x", params={"sweep.depths": [1, 2]}, tags={"k": "v"})

    child = start_child_run(sweep, "depth-1", {"depthfinder.depth": "1"})

    client = MlflowClient(tracking_uri=uri)
    assert client.get_run(child).data.tags["mlflow.parentRunId"] == sweep.run_id
    assert client.get_run(sweep.run_id).data.params["sweep.depths"] == "[1, 2]"
    assert client.get_run(sweep.run_id).data.tags["k"] == "v"


def test_the_code_version_changes_with_any_source_edit(tmp_path) -> None:
    for package in SOURCE_PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "encoder" / "model.py").write_text("DEPTH = 1\n")
    (tmp_path / "README.md").write_text("docs")
    before = source_digest(tmp_path)
    (tmp_path / "README.md").write_text("other docs")
    assert source_digest(tmp_path) == before  # not code
    (tmp_path / "encoder" / "model.py").write_text("DEPTH = 2\n")
    assert source_digest(tmp_path) != before
    assert code_version().endswith("+" + source_digest(Path(tracking.__file__).resolve().parents[1]))


def test_the_code_version_digests_every_floor_of_the_house(tmp_path) -> None:
    """Every floor of the one installed package but the CLI decides a model (the rule, the record, the training),
    and a digest of a folder holding none of them would never change: it refuses."""
    import tomllib

    package = Path(tracking.__file__).resolve().parents[1]
    packages = tomllib.loads((package.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert packages["find"]["include"] == ["depthfinder*"]  # one import root: nothing else lands in site-packages
    floors = {path.parent.name for path in package.glob("*/__init__.py")}
    assert set(SOURCE_PACKAGES) == floors - {"cli"}
    with pytest.raises(FileNotFoundError, match="no package"):
        source_digest(tmp_path)


def test_a_table_a_run_keeps_is_fetched_whole_and_a_missing_one_is_not(tmp_path: Path) -> None:
    from depthfinder.tracking.runs import TABLE_ARTIFACTS, fetch_table

    sweep = create_sweep_run(f"sqlite:///{tmp_path / 'mlflow.db'}", "exp", "model", "sweep", params={}, tags={})
    kept = tmp_path / "abc.parquet"
    kept.write_bytes(b"the table")
    sweep.client.log_artifact(sweep.run_id, str(kept), TABLE_ARTIFACTS)
    work = tmp_path / "work" / "data"

    assert fetch_table(sweep.client, sweep.run_id, work / "abc.parquet")
    assert (work / "abc.parquet").read_bytes() == b"the table"
    assert not fetch_table(sweep.client, sweep.run_id, work / "other.parquet")
    assert sorted(path.name for path in work.iterdir()) == ["abc.parquet"]  # nothing half-written left
