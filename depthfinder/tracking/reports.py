"""What a sweep's parent run keeps besides its candidates: what changed, the audit, the run summary, the model card.

Plain functions of a SweepRun, no Prefect (tasks/tracking.py wraps them in retrying tasks). The one part of
encoder that knows expectations' reports: it records what the data layer found.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from depthfinder.expectations.audit.report import FLAGGED_ROWS, FOREIGN_ROWS, AuditReport, suspect_rows, suspects_csv
from depthfinder.expectations.changes.report import ChangeReport
from depthfinder.tracking.history import alias_history, history_table
from depthfinder.tracking.registry import current_champion
from depthfinder.tracking.runs import RUN_NAME_TAG, SweepRun, log_folder, log_metrics, set_tags

AUDIT_REPORT, CHANGE_REPORT, SUMMARY = "audit/report.json", "changes/what_changed.json", "summary.json"
# MLflow keeps at most this many characters of a tag's value (the run note is a tag).
NOTE_LIMIT = 8000
# And of a model version's or registered model's description (a VARCHAR(5000) in its SQL stores: PostgreSQL refuses
# a longer one, SQLite does not check).
DESCRIPTION_LIMIT = 5000
# The whole model card, an artifact of the sweep's parent run, wherever a description has to be cut to fit.
CARD = "model_card.md"


def log_audit_report(sweep: SweepRun, report: AuditReport, docs_dir: str | None, first_line: int | None = None) -> None:
    """The audit's JSON report, every flagged row with its file line (`first_line`: that of row 0), text, label
    and likely label (FLAGGED_ROWS), its GX Data Docs (when `docs_dir` was written) and the dropped-row count, on
    the parent run; tagged with its verdict (passed, passed with warnings, blocked)."""
    client = sweep.client
    client.log_dict(sweep.run_id, report.to_dict(), AUDIT_REPORT)
    client.log_text(sweep.run_id, suspects_csv(suspect_rows(report.checks, first_line)), FLAGGED_ROWS)
    if docs_dir and Path(docs_dir).is_dir():
        log_folder(client, sweep.run_id, docs_dir, "audit/data_docs")
    log_metrics(client, sweep.run_id, {"audit.dropped_rows": float(sum(report.dropped.values()))})
    set_tags(client, sweep.run_id, {"depthfinder.audit": report.verdict})


def log_change_report(sweep: SweepRun, report: ChangeReport, first_line: int | None = None) -> None:
    """What changed since the champion, on the parent run: its figures as `changes.*` metrics, the policy as tags
    (`forced past stop` where --force overrode it), the JSON report, the rows added it flagged foreign
    (FOREIGN_ROWS) and its GX Data Docs."""
    figures = {"rows_added": report.rows_added, "rows_removed": report.rows_removed,
               "relabelled": report.relabelled, "drift_auc": report.drift_auc, "length_shift": report.length_shift,
               "foreign_rows": report.foreign_rows, "foreign_share": report.foreign_share,  # of the champion's table
               "foreign_share_of_added": report.foreign_share_of_added,
               "label_psi": report.label_shift.psi if report.label_shift else None,
               "champion_on_new": report.champion_on_new.on_new if report.champion_on_new else None}
    client = sweep.client
    log_metrics(client, sweep.run_id, {f"changes.{name}": value for name, value in figures.items()})
    client.log_dict(sweep.run_id, report.to_dict(), CHANGE_REPORT)
    if foreign := suspect_rows(report.foreign, first_line):
        client.log_text(sweep.run_id, suspects_csv(foreign), FOREIGN_ROWS)
    if report.data_docs:
        log_folder(client, sweep.run_id, str(Path(report.data_docs).parent), "changes/data_docs")
    set_tags(client, sweep.run_id, {"depthfinder.changes": report.policy.tag,
                                    "depthfinder.champion_compared": report.champion_version})


def log_run_summary(sweep: SweepRun, summary: dict[str, Any], tags: dict[str, Any], plots: list[str],
                    metrics: dict[str, float] | None = None, files: list[str] = ()) -> None:
    """The run summary (summary.json), the decision's tags, metrics and plots, and other `files` beside the summary,
    on the parent run."""
    client = sweep.client
    client.log_dict(sweep.run_id, summary, SUMMARY)
    for path in plots:
        client.log_artifact(sweep.run_id, path, "plots")
    for path in files:
        client.log_artifact(sweep.run_id, path)
    set_tags(client, sweep.run_id, tags)
    log_metrics(client, sweep.run_id, metrics or {})


def describe_run(sweep: SweepRun, note: str, name: str | None = None) -> None:
    """`note` as the parent run's description (MLflow's run note), and `name` as its name when given."""
    set_tags(sweep.client, sweep.run_id, {"mlflow.note.content": note[:NOTE_LIMIT],
                                          **({RUN_NAME_TAG: name} if name else {})})


def describe_version(sweep: SweepRun, model_name: str, version: str, card: str) -> None:
    """The model card as the version's description and the sweep's run note; and, with the promotion history as a
    table, as the registered model's description (the champion's card: the new version's if it was promoted)."""
    client = sweep.client
    client.log_text(sweep.run_id, card, CARD)
    client.update_model_version(model_name, version, description=fitted(card, DESCRIPTION_LIMIT))
    set_tags(client, sweep.run_id, {"mlflow.note.content": fitted(card, NOTE_LIMIT)})
    champion = current_champion(client, model_name)
    head = card if champion is None or str(champion.version) == str(version) else (champion.description or "")
    # The history's newest moves first, in at most half the space; the champion's card in the rest.
    history = fitted(f"\n## Promotion history\n\n{history_table(alias_history(client, model_name))}\n",
                     DESCRIPTION_LIMIT // 2, "older moves: the registered model's alias history")
    client.update_registered_model(model_name, description=fitted(head, DESCRIPTION_LIMIT - len(history)) + history)


def fitted(text: str, limit: int, rest: str = f"the whole card: the parent run's artifact {CARD}") -> str:
    """`text` whole when it fits in `limit` characters; else cut at a line end, with a last line that says it was
    cut and where the rest is."""
    if len(text) <= limit:
        return text
    tail = f"\n\n*… cut to MLflow's {limit:,} characters; {rest}.*\n"
    kept = text[: max(0, limit - len(tail))]
    return (kept[: kept.rfind("\n")] if "\n" in kept else kept) + tail
