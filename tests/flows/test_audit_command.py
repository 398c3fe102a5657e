"""`depthfinder audit` on its own: exit 0 pass, 1 blocked; --report-json, --data-docs, --drop-*."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from depthfinder.cli.main import main
from depthfinder.expectations.table.datasets import DATASETS


@pytest.fixture
def conflicting_csv(tmp_path: Path) -> Path:
    """The topics dataset with one text given two labels (rows 0 and 1)."""
    table = DATASETS["topics"].generate(600, seed=2)
    table.loc[1, "text"] = table.loc[0, "text"].upper()
    table.loc[1, "label"] = "cooking" if table.loc[0, "label"] != "cooking" else "travel"
    path = tmp_path / "conflicting.csv"
    table.to_csv(path, index=False)
    return path


def test_a_conflict_blocks_and_drop_conflicts_drops_and_counts_it(
    prefect_server, conflicting_csv: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)

    blocked = main(["audit", "--data", str(conflicting_csv), "--report-json", "blocked.json"])
    dropped = main([
        "audit", "--data", str(conflicting_csv), "--drop-conflicts", "--report-json", "dropped.json",
        "--data-docs", "docs",
    ])

    assert (blocked, dropped) == (1, 0)
    report = json.loads((tmp_path / "blocked.json").read_text())
    assert report["blocking_failures"] == ["conflicting_labels"] and report["dropped"] == {}
    conflict = next(c for c in report["checks"] if c["name"] == "conflicting_labels")
    assert conflict["examples"][0]["row"] == 0 and conflict["examples"][0]["matches"] == [1]
    report = json.loads((tmp_path / "dropped.json").read_text())
    assert report["success"] is True and report["dropped"] == {"conflicts": 2}
    assert "dropped before the audit: 2 conflicts" in capsys.readouterr().out
    index = (tmp_path / "docs" / "index.html").read_text()
    assert "conflicting_labels" in index and "suspected_label_noise" in index
    assert not list((tmp_path / "docs").rglob("*.gif"))  # GX's tutorial images are not kept


def test_the_audit_judges_the_table_it_is_given_not_a_cached_one_with_the_same_texts(
    prefect_server, tmp_path: Path, monkeypatch
) -> None:
    """Same texts, labels and splits, but one file also has a column that gives the label away."""
    monkeypatch.chdir(tmp_path)
    table = DATASETS["topics"].generate(600, seed=3)
    table.to_csv(tmp_path / "clean.csv", index=False)
    table.assign(source_id=table["label"].map({label: f"src-{i}" for i, label in enumerate(table["label"].unique())}))\
        .to_csv(tmp_path / "leaky.csv", index=False)

    codes = [main(["audit", "--data", f"{name}.csv", "--report-json", f"{name}.json"])
             for name in ("clean", "leaky", "clean")]

    assert codes == [0, 1, 0]
    reports = {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in ("clean", "leaky")}
    assert reports["leaky"]["blocking_failures"] == ["label_giveaway_columns"]
    assert reports["clean"]["success"] is True


def test_look_alike_labels_are_one_class_and_the_report_counts_them(
    prefect_server, tmp_path: Path, monkeypatch, capsys
) -> None:
    """`négatif` in NFC, in NFD and with a zero-width space is one class of a two-class table."""
    monkeypatch.chdir(tmp_path)
    table = DATASETS["reviews-negation"].generate(600, seed=2)
    spellings = ["n\u00e9gatif", "ne\u0301gatif", "n\u00e9gatif\u200b"]
    negative = table.index[table["label"] == "negative"]
    table.loc[negative, "label"] = [spellings[i % 3] for i in range(len(negative))]
    table.loc[table["label"] == "positive", "label"] = "positif"
    table.loc[0, "text"] = "  "  # dropped before the audit: the count of labels normalised survives it
    table.to_csv(tmp_path / "look_alikes.csv", index=False)

    code = main(["audit", "--data", "look_alikes.csv", "--drop-empty", "--report-json", "report.json"])

    assert code == 0
    report = json.loads((tmp_path / "report.json").read_text())
    imbalance = next(c for c in report["checks"] if c["name"] == "class_imbalance")
    assert imbalance["observed"]["classes"] == 2
    assert sorted(imbalance["observed"]["test_counts"]) == ["n\u00e9gatif", "positif"]
    assert report["dropped"] == {"empty": 1}
    normalized = report["normalized_labels"]
    assert normalized["rows"] == len(negative) - len(negative[::3]) and normalized["spellings"] == 2
    assert [example["raw"] for example in normalized["examples"]] == ["'ne\\u0301gatif'", "'négatif\\u200b'"]
    assert f"labels normalised when loaded (Unicode NFC, invisible characters, white space): {normalized['rows']} " \
        f"rows, 2 spellings, e.g. row {negative[1]} 'ne\\u0301gatif' -> 'négatif'" in capsys.readouterr().out
