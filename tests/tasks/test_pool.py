"""The pool cut for distillation: the texts students learn from are never the pool's evidence."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from depthfinder.tasks.pool import PoolTexts, teaching_texts


def _pool(tmp_path: Path, labels: dict[int, str], rows: int = 40) -> PoolTexts:
    frame = pd.DataFrame({"text": [f"text number {i}" for i in range(rows)],
                          "label": [labels.get(i, "") for i in range(rows)]})
    path = tmp_path / f"pool-{len(labels)}.parquet"
    frame.to_parquet(path, index=False)
    return PoolTexts(path=str(path), digest="whole", rows=rows, labelled=len(labels))


def _texts(part: PoolTexts) -> list[str]:
    return pd.read_parquet(part.path)["text"].tolist()


def test_the_taught_texts_and_the_evidence_are_apart_and_together_the_pool(tmp_path: Path) -> None:
    pool = _pool(tmp_path, {})
    taught, evidence = teaching_texts.fn(pool, 12, tmp_path / "work")
    assert (taught.rows, evidence.rows) == (12, 28)
    assert not set(_texts(taught)) & set(_texts(evidence))
    assert sorted(_texts(taught) + _texts(evidence)) == sorted(_texts(pool))
    assert taught.digest != evidence.digest  # predictions of the evidence are kept apart from the whole pool's
    # never more than half: the rest stays evidence
    most, rest = teaching_texts.fn(pool, 1000, tmp_path / "work")
    assert (most.rows, rest.rows) == (20, 20)
    assert teaching_texts.fn(_pool(tmp_path, {}, rows=1), 5, tmp_path / "work")[0] is None


def test_labels_given_on_a_rerun_cut_the_pool_the_same_way_and_stay_with_the_evidence(tmp_path: Path) -> None:
    taught, evidence = teaching_texts.fn(_pool(tmp_path, {}), 12, tmp_path / "work")
    unlabelled = _texts(evidence)
    labelled_at = {i: "spam" for i in range(40) if f"text number {i}" in unlabelled[:3]}
    taught_again, evidence_again = teaching_texts.fn(_pool(tmp_path, labelled_at), 12, tmp_path / "work")
    assert taught_again == taught  # same texts, same file: the students it taught are reused
    assert evidence_again.labelled == 3 and evidence_again.digest == evidence.digest
    assert set(pd.read_parquet(taught_again.path)["label"]) == {""}


def test_a_pool_of_pairs_is_cut_by_pair_and_its_rows_to_label_read_back_as_labels(tmp_path: Path) -> None:
    from depthfinder.expectations.table.config import DataConfig
    from depthfinder.expectations.table.pool import load_text_labels
    from depthfinder.tasks.pool import pool_examples, pool_texts, write_rows_to_label

    frame = pd.DataFrame({"text": [f"first {i}" for i in range(10)], "pair": [f"second {i}" for i in range(10)],
                          "label": ""})
    frame.to_parquet(tmp_path / "pairs.parquet", index=False)
    pool = PoolTexts(path=str(tmp_path / "pairs.parquet"), digest="pairs", rows=10, labelled=0)
    taught, evidence = teaching_texts.fn(pool, 4, tmp_path / "work")
    pairs = pool_examples(taught) + pool_examples(evidence)
    assert sorted(pairs) == [(f"first {i}", f"second {i}") for i in range(10)]  # each pair kept whole
    assert len(pool_texts(pool)) == 20  # every text, each side on its own (what a vocabulary keeps)
    data = DataConfig(path=tmp_path / "data.csv", task="pairs", text_col="premise", pair_col="hypothesis",
                      label_col="verdict")
    asked = pd.read_csv(write_rows_to_label(evidence, [2, 0], tmp_path / "rows_to_label.csv", data))
    assert list(asked.columns) == ["premise", "hypothesis", "verdict"]
    asked.assign(verdict=["yes", "no"]).to_csv(tmp_path / "labelled.csv", index=False)
    evidence_pairs = pool_examples(evidence)
    assert load_text_labels(tmp_path / "labelled.csv", data) == {evidence_pairs[2]: "yes", evidence_pairs[0]: "no"}
