"""Judge what changed since the champion (every change check, validated with GX) and decide the night."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from depthfinder.expectations.audit.report import CheckResult
from depthfinder.expectations.audit.run import validate_checks
from depthfinder.expectations.changes.checks import CHANGE_CHECKS
from depthfinder.expectations.changes.compare import CHAMPION_LABEL_COLUMN, Comparison, with_drift_scores
from depthfinder.expectations.changes.report import ChangeReport, Policy


def judge_changes(table: pd.DataFrame, comparison: Comparison, docs_dir: Path | None = None) -> ChangeReport:
    """Validate every change check over the comparison table (see compare.py) and decide skip, retrain or stop.

    Args:
        table: comparison_table(champion's table, tonight's table).
        comparison: thresholds, the champion's version and scores, and the settings that changed.
        docs_dir: when given, the GX Data Docs of the validations are built there.

    Returns:
        The report: each measure's check, the figures and the policy's decision with its reason.
    """
    table = with_drift_scores(table, comparison.config)
    if comparison.champion is not None:
        predicted = pd.Series(comparison.champion.predicted, dtype="object")
        table = table.assign(**{CHAMPION_LABEL_COLUMN: predicted.reindex(table.index)})
    validated = validate_checks(table, CHANGE_CHECKS, comparison, comparison.config.examples, docs_dir)
    report = ChangeReport.from_checks(
        validated.results, table, comparison.champion_version, list(comparison.settings_changed),
        decide(validated.results, comparison), comparison.config.thresholds(),
    )
    return report.model_copy(update={"data_docs": validated.data_docs})


def decide(checks: list[CheckResult], comparison: Comparison) -> Policy:
    """Stop on a failed error-level measure; retrain when the settings changed or a retraining measure failed;
    else skip when `skip_minor`, retrain otherwise. The reason names the measures that decided."""
    version = comparison.champion_version
    failed = [check for check in checks if not check.success]
    stops = [check for check in failed if check.severity == "error"]
    if stops:
        return Policy(decision="stop", reason=f"tonight's data is not what version {version} learned from, so "
                      f"nothing is trained until a person looks: {_named(stops)}")
    retrains = [check for check in failed if CHANGE_CHECKS.get(check.name).retrains]
    if comparison.settings_changed:
        changed = ", ".join(comparison.settings_changed)
        also = f"; the data too: {_named(retrains)}" if retrains else ""
        return Policy(decision="retrain", reason=f"the settings that decide the model changed since version "
                      f"{version} ({changed}){also}")
    if retrains:
        return Policy(decision="retrain", reason=f"the data changed enough since version {version}: {_named(retrains)}")
    minor = f"no change since version {version} reaches a retrain threshold ({_named(checks[:1])})"
    if comparison.config.skip_minor:
        return Policy(decision="skip", reason=f"{minor}; version {version} stays champion")
    return Policy(decision="retrain", reason=f"{minor}, but changes.skip_minor is off, so any change retrains")


def _named(checks: list[CheckResult]) -> str:
    """Checks as 'name: headline', joined."""
    return "; ".join(f"{check.name}: {check.headline}" for check in checks)
