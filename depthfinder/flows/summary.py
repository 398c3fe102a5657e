"""What a run decided, as one record: `run --summary-json` writes it, the MLflow parent run keeps it.

Built from the typed records of the layers below (candidates and the decision from
selection, the audit report from expectations.audit). `RunSummary.from_dict` reads a
summary back, and `choose_depth(summary.candidates, summary.rule.settings)` replays
its decision. docs/summary.md documents every field, generated from these models.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from depthfinder.encoder.verdict import Deployment, UnmetLimit
from depthfinder.evidence.bootstrap import Interval
from depthfinder.expectations.audit.report import AuditReport
from depthfinder.expectations.changes.report import ChangeReport
from depthfinder.flows.older import upgrade_summary
from depthfinder.runtime.records import Record
from depthfinder.selection.budget import Budget
from depthfinder.selection.candidate import Candidate
from depthfinder.selection.crossfit import CrossFit
from depthfinder.selection.decision import Decision
from depthfinder.selection.halving import Halving
from depthfinder.selection.learning_rate import RateCheck
from depthfinder.selection.pool import PoolUse
from depthfinder.selection.promotion import RowsApart
from depthfinder.selection.search import Search
from depthfinder.tracking.records import ModelVersionRef


class AuditInforms(Record):
    """What the audit changed in training."""

    class_weights: bool = Field(description="The loss was weighted by inverse class frequency.")
    metric: str = Field(description="The metric the rule chose by.")
    near_duplicates_grouped: bool = Field(description="Rows were split by a MinHash of their text.")
    dropped_rows: int = Field(description="Rows dropped before the audit.")
    note: str | None = Field(None, description="A warning about the metric, when the data is imbalanced.")


class RunAudit(AuditReport):
    """The audit report, and what it changed in training."""

    informs: AuditInforms = Field(description="What the audit changed in training.")


class RowsUsed(Record):
    """The rows of the prepared table the run used (after the rows `audit.drop` removed), in all and per split."""

    total: int = Field(description="Rows in all.")
    train: int = Field(description="Rows trained on.")
    val: int = Field(description="Validation rows: early stopping and the rule chose by them.")
    test: int = Field(description="Test rows: reported, and promotion compared on them.")

    @classmethod
    def of(cls, rows: int, split_rows: dict[str, int]) -> RowsUsed:
        return cls(total=rows, **{split: split_rows.get(split, 0) for split in ("train", "val", "test")})

    def text(self) -> str:
        """`1,500 rows: train 1,200, validation 150, test 150`."""
        return f"{self.total:,} rows: train {self.train:,}, validation {self.val:,}, test {self.test:,}"


class RunSummary(Record):
    """What one run decided."""

    skipped: bool = Field(
        False, description="Nothing was retrained: a model of the same data, settings and code exists, or nothing "
        "changed enough since the champion (changes.policy)."
    )
    reason: str | None = Field(None, description="Why the run was skipped.")
    changes: ChangeReport | None = Field(
        None, description="What changed since the champion was trained, and the policy's decision; none without a "
        "champion (or when its table was not kept)."
    )
    audit: RunAudit | None = Field(None, description="The audit's verdict; none when skipped or stopped by changes.")
    candidates: list[Candidate] = Field([], description="Every (depth, seed) of the sweep.")
    selected_depth: int | None = Field(None, description="The chosen depth; none when skipped or blocked.")
    rule: Decision | None = Field(None, description="How the depth was chosen, and why.")
    halving: Halving | None = Field(None, description="What successive halving did; none without halving.")
    search: list[Search] = Field([], description="What the search strategy screened and confirmed, per family.")
    budget: Budget | None = Field(
        None, description="The sweep's budget in training FLOPs (sweep.budget_flops), what it spent and what it left "
        "untried; none without a budget."
    )
    crossfit: CrossFit | None = Field(
        None, description="What cross-fitting did (sweep.crossfit): the depths trained on folds, the out-of-fold rows "
        "the rule judged them on, the training time spent against its budget; or why it did not run. None when the "
        "validation rows settled every cheaper depth (or crossfit off)."
    )
    pool: PoolUse | None = Field(
        None, description="What the run made of its unlabelled texts (sweep.pool): the copies of labelled texts "
        "it left out, and the new texts it taught on and judged on; none without a pool."
    )
    rows_to_label: str | None = Field(
        None, description="CSV of the unlabelled texts whose labels could settle a cheaper depth the pool could not "
        "bound within the tolerance (text, and an empty label to fill in; give it back with --labels); none when "
        "nothing was left to settle or there was no pool."
    )
    lr_check: list[RateCheck] = Field([], description="The learning-rate check per family (sweep.check_lr).")
    deployment: Deployment | None = Field(
        None, description="The chosen model's forms (torch, ONNX, int8 ONNX): each one's test metric, latency at "
        "batch 1 and 32 and size, and which ship with the version (within the deployment margin of torch)."
    )
    unmet: UnmetLimit | None = Field(
        None, description="The verdict on a size limit (max_size_mb) that no form the deployment gate ships met, with "
        "every form tried (size, test score, interval, shipped or refused); nothing was registered."
    )
    model: ModelVersionRef | None = Field(None, description="The version registered (or, when skipped, reused).")
    promoted: bool | None = Field(None, description="Whether it became champion.")
    promotion: str | None = Field(None, description="Why it was promoted or not, in a phrase.")
    champion_version: str | None = Field(None, description="The champion after the run.")
    challenger_test_metrics: dict[str, float] | None = Field(
        None, description="The registered version's metrics on the test rows promotion judged on (promotion_rows)."
    )
    champion_test_metrics: dict[str, float] | None = Field(
        None, description="The champion's metrics on the same test rows; none without a champion."
    )
    promotion_rows: int | None = Field(
        None, description="Test rows promotion judged on: when the table changed since the champion, only the "
        "champion's own test rows still in tonight's test split (the comparison is fair there); else every test row."
    )
    rows_apart: list[RowsApart] = Field(
        [], description="Test rows promotion did not judge on (added since the champion, those flagged foreign apart, "
        "or rows whose texts the champion learned from), with both models' scores on them: reported, never deciding."
    )
    comparison: Interval | None = Field(
        None, description="The challenger's test metric minus the champion's on the same rows, with the paired "
        "bootstrap interval promotion was decided by; none without a champion."
    )
    promotion_margin: float | None = Field(
        None, description="How much worse than the champion the challenger could be and still be promoted (the "
        "promotion margin, sweep.promotion_margin); none without a champion."
    )
    mlflow_run_id: str | None = Field(None, description="The sweep's MLflow parent run.")
    data_hash: str = Field(description="Content hash of the texts, labels and splits trained on.")
    rows: RowsUsed | None = Field(
        None, description="The rows the run used, in all and per split (the table as prepared, after audit.drop); "
        "none in summaries written before it."
    )

    @model_validator(mode="before")
    @classmethod
    def _read_older(cls, values: object) -> object:
        """A summary an earlier version wrote, in this version's form (flows.older)."""
        return upgrade_summary(values)
