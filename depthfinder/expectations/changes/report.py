"""The what-changed report: each measure's check result, the figures a script reads, and the policy's decision.

`RunSummary.changes` is this record; the terminal lines and the Prefect artifact `what-changed`
are rendered here from it, so nothing downstream knows a change check by name.
"""

from __future__ import annotations

from typing import Literal

import pandas as pd
from pydantic import Field

from depthfinder.expectations.audit.report import (
    EXAMPLES_SHOWN,
    CheckResult,
    cell,
    example_line,
    examples_table,
    figure_cells,
    markdown_table,
)
from depthfinder.expectations.changes.compare import CHANGE_COLUMN, SIDE_COLUMN
from depthfinder.runtime.records import Record

Decision = Literal["skip", "retrain", "stop"]
# The word that marks a night --force retrained past the comparison's stop (or skip): tags, names, messages, cards.
FORCED = "forced"


class Policy(Record):
    """What the night does about the changes, and why, in one sentence."""

    decision: Decision = Field(description="skip (nothing material changed), retrain, or stop (exit 1, nothing "
                               "trained).")
    reason: str = Field(description="Why, in one sentence.")
    overridden: Decision | None = Field(
        None, description="What the comparison said (stop or skip) when --force (the flow's force parameter) "
        "retrained anyway; none when nothing was overridden."
    )

    @property
    def tag(self) -> str:
        """The decision as a tag value: `retrain`, or `forced past stop` when --force overrode the comparison."""
        return f"{FORCED} past {self.overridden}" if self.overridden else self.decision


class LabelShift(Record):
    """How far the label mix of the rows added moved from the champion's."""

    psi: float = Field(description="Population stability index of the two mixes (0.1: moderate, 0.25: large).")
    p_value: float = Field(description="Chi-square test of the class counts of the two sides.")


class ChampionOnNew(Record):
    """The registered champion's quality on the rows added, next to its quality on its own test rows."""

    metric: str = Field(description="The selection metric.")
    on_new: float = Field(description="On (a sample of) the rows added since it was trained.")
    on_new_low: float | None = Field(None, description="The lower end of its 90 % bootstrap interval.")
    on_new_high: float | None = Field(None, description="Its upper end.")
    on_test: float = Field(description="On the test rows of the table it was trained on.")
    rows: int = Field(description="Rows added it was scored on.")
    on_foreign: float | None = Field(None, description="On the rows added that look foreign (foreign_rows); none "
                                     "without such a block.")
    on_foreign_low: float | None = Field(None, description="The lower end of its interval.")
    on_foreign_high: float | None = Field(None, description="Its upper end.")
    on_rest: float | None = Field(None, description="On the other rows added: the decay the policy judges when a "
                                  "foreign block is there.")
    on_rest_low: float | None = Field(None, description="The lower end of its interval.")
    on_rest_high: float | None = Field(None, description="Its upper end.")


class ChangeReport(Record):
    """What changed since the champion was trained, measure by measure, and what the night does about it."""

    champion_version: str = Field(description="The champion compared with.")
    rows_before: int = Field(description="Rows of the champion's table.")
    rows_now: int = Field(description="Rows of tonight's table.")
    rows_added: int = Field(description="Rows whose text and label the champion's table did not have.")
    rows_removed: int = Field(description="Rows of the champion's table that are gone.")
    relabelled: int = Field(description="Rows whose text the champion's table held under another label.")
    label_shift: LabelShift | None = Field(None, description="The label mix of the rows added vs the champion's; "
                                           "none when too few rows were added.")
    new_classes: list[str] = Field([], description="Classes the champion never saw.")
    vanished_classes: list[str] = Field([], description="Classes of the champion's table that are gone.")
    drift_auc: float | None = Field(None, description="Out-of-fold AUC telling the rows added from the champion's "
                                    "(0.5: the same world); none when too few rows were added.")
    foreign_rows: int | None = Field(None, description="Rows added the drift classifier tells from the champion's "
                                     "rows with confidence, one by one: a block of another task, even when diluted.")
    foreign_share: float | None = Field(
        None, description="Those rows as a share of the champion's table (rows_before), not of the rows added: the "
        "share the stop threshold (changes.stop_foreign_fraction) is judged by."
    )
    foreign_share_of_added: float | None = Field(
        None, description="Those rows as a share of the rows added (rows_added): how much of tonight's new data "
        "looks foreign."
    )
    length_shift: float | None = Field(None, description="Kolmogorov-Smirnov distance of the word counts.")
    champion_on_new: ChampionOnNew | None = Field(None, description="Decay; none when it could not be measured.")
    champion_test_rows_gone: int = Field(0, description="Test rows of the champion's table no longer in tonight's.")
    settings_changed: list[str] = Field([], description="Settings that decide the model and differ from the "
                                        "champion's (config_hash, code_version, pretrained).")
    checks: list[CheckResult] = Field(description="Each measure as a GX validation, with its severity and evidence.")
    thresholds: dict[str, str] = Field({}, description="Each measure's thresholds as the policy reads them.")
    policy: Policy = Field(description="What the night does about it.")
    data_docs: str | None = Field(None, exclude=True)
    champion_table: str | None = Field(None, exclude=True)  # the table compared with, for promotion's fair rows

    @classmethod
    def from_checks(cls, checks: list[CheckResult], table: pd.DataFrame, champion_version: str,
                    settings_changed: list[str], policy: Policy, thresholds: dict[str, str]) -> ChangeReport:
        """The figures read back from the checks' observed values, with the comparison table's row counts."""
        counts = table.groupby([SIDE_COLUMN, CHANGE_COLUMN]).size()
        observed = {check.name: check.observed for check in checks}
        shift, drift = observed["label_shift"], observed["text_drift"]
        decay = observed["champion_decay"]
        return cls(
            champion_version=champion_version,
            rows_before=int((table[SIDE_COLUMN] == "champion").sum()),
            rows_now=int((table[SIDE_COLUMN] == "tonight").sum()),
            rows_added=int(counts.get(("tonight", "added"), 0)),
            rows_removed=int(counts.get(("champion", "removed"), 0)),
            relabelled=int(counts.get(("tonight", "relabelled"), 0)),
            label_shift=LabelShift(psi=shift["psi"], p_value=shift["p_value"]) if "psi" in shift else None,
            new_classes=observed["new_or_vanished_classes"].get("new_classes", []),
            vanished_classes=observed["new_or_vanished_classes"].get("vanished_classes", []),
            drift_auc=drift.get("auc"),
            foreign_rows=observed["foreign_rows"].get("rows"), foreign_share=observed["foreign_rows"].get("fraction"),
            foreign_share_of_added=observed["foreign_rows"].get("share_of_added"),
            length_shift=observed["length_shift"].get("ks"),
            champion_on_new=ChampionOnNew(
                rows=decay["new_rows"], **{key: decay.get(key) for key in ChampionOnNew.model_fields if key != "rows"}
            ) if "on_new" in decay else None,
            champion_test_rows_gone=int(observed["champion_test_rows"].get("rows", 0)),
            settings_changed=settings_changed, checks=checks, policy=policy, thresholds=thresholds,
        )

    def check(self, name: str) -> CheckResult:
        """The result of the change check called `name`."""
        return next(check for check in self.checks if check.name == name)

    @property
    def foreign(self) -> list[CheckResult]:
        """The foreign-rows check, whose suspects are the rows added it flagged (none when it was not run)."""
        return [check for check in self.checks if check.name == "foreign_rows"]

    @property
    def foreign_row_numbers(self) -> set[int]:
        """The `row` of every row added that the foreign-rows check flagged."""
        return {int(suspect["row"]) for check in self.foreign for suspect in check.suspects}


def verdict(check: CheckResult, retrains: bool) -> str:
    """A change check's verdict: same, n/a (not judged), STOP, retrain (a change worth a retrain) or noted
    (reported only)."""
    if "not_judged" in check.observed:
        return "n/a"
    if check.success:
        return "same"
    if check.severity == "error":
        return "STOP"
    return "retrain" if retrains else "noted"


def _verdicts(report: ChangeReport) -> list[str]:
    from depthfinder.expectations.changes.checks import CHANGE_CHECKS

    return [verdict(check, CHANGE_CHECKS.get(check.name).retrains) for check in report.checks]


def changes_lines(report: ChangeReport) -> list[str]:
    """One line per measure (verdict, name, headline), its first examples when it changed, and the decision."""
    lines = [f"  compared with the champion, version {report.champion_version}: "
             f"{report.rows_before} rows then, {report.rows_now} now"]
    for check, word in zip(report.checks, _verdicts(report), strict=True):
        lines.append(f"  {word:<7} {check.name:<24} {check.headline}".rstrip())
        if not check.success:
            shown = check.examples[:EXAMPLES_SHOWN]
            lines += [f"          {example_line(example, check.evidence)}" for example in shown]
    lines.append(f"  policy: {report.policy.decision}: {report.policy.reason}")
    return lines


def changes_markdown(report: ChangeReport) -> str:
    """The what-changed report for the Prefect UI, every table narrow enough for its page (which never wraps a
    cell): the decision, a table of measures (verdict, figure; a long figure on a line below it), a table of
    thresholds, then the top examples."""
    figures, below = figure_cells([check.name for check in report.checks], [c.headline for c in report.checks])
    rows = [[check.name, word, figure] for check, word, figure in zip(report.checks, _verdicts(report), figures,
                                                                       strict=True)]
    thresholds = [[check.name, cell(report.thresholds[check.name])] for check in report.checks
                  if check.name in report.thresholds]
    parts = [
        f"# What changed since version {report.champion_version}: {report.policy.tag}",
        f"**{report.policy.tag}**: {report.policy.reason}",
        f"{report.rows_before} rows then, {report.rows_now} now: {report.rows_added} added, "
        f"{report.rows_removed} removed, {report.relabelled} relabelled.",
        markdown_table(["measure", "verdict", "figure"], rows),
        *below,
        "## Thresholds",
        markdown_table(["measure", "retrains or stops when"], thresholds),
    ]
    for check in report.checks:
        if check.success or not check.examples:
            continue
        parts += [f"## {check.name}", examples_table(check)]
    return "\n\n".join(parts)


def decisive(report: ChangeReport) -> list[str]:
    """The measures behind the night's decision: those that stop it (a stop --force overrode included), else those
    that retrain it; none for a skip."""
    wanted = "STOP" if "stop" in (report.policy.decision, report.policy.overridden) else "retrain"
    return [check.name for check, word in zip(report.checks, _verdicts(report), strict=True) if word == wanted]


def changes_description(report: ChangeReport) -> str:
    """The what-changed artifact's description, outcome first (the Prefect UI's artifact cards show ~35 characters):
    `Forced past stop: text_drift, foreign_rows; since version 1`."""
    names = ", ".join(decisive(report)) if report.policy.decision != "skip" else ""
    tag = report.policy.tag
    return f"{tag[0].upper()}{tag[1:]}" + (f": {names}" if names else "") + f"; since version {report.champion_version}"
