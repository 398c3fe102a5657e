"""Run the registered checks as Great Expectations validations and gather the audit report."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.checks.base import (
    KEY_COLUMN,
    NORMALIZED_COLUMN,
    USABLE_COLUMN,
    Check,
    CheckPlan,
    to_jsonable,
)
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.pairs import PAIR_COLUMN, add_pair_columns, is_pairs_table
from depthfinder.expectations.audit.registry import checks_for
from depthfinder.expectations.audit.report import AuditReport, CheckResult
from depthfinder.expectations.table.normalize import has_usable_token, normalized_texts_and_keys

if TYPE_CHECKING:
    from great_expectations.core import ExpectationSuiteValidationResult
    from great_expectations.data_context import AbstractDataContext
    from great_expectations.datasource.fluent import PandasDatasource

# COMPLETE for unexpected_index_list; no index query and no partial lists, which
# would only copy values we already hold.
RESULT_FORMAT = {"result_format": "COMPLETE", "return_unexpected_index_query": False, "partial_unexpected_count": 0}
OUR_SEVERITY = {"critical": "error", "warning": "warning", "info": "warning"}
DOCS_SITE = "depthfinder_audit"


def run_audit(
    table: pd.DataFrame, config: AuditConfig, checks: Iterable[type[Check]] | None = None,
    docs_dir: Path | None = None,
) -> AuditReport:
    """Validate the table with the checks for its shape (or `checks`) in an ephemeral GX context.

    Args:
        table: the canonical table (text, label, split, row, ... as from load_table
            and assign_splits; a pairs table has `pair`, the second text, too; a token table one row per
            sentence with `tokens` and `tags`, its `text` the tokens and its `label` the tags joined by spaces).
        config: thresholds, examples per check, and whether warnings block (`strict`).
        checks: check classes to run instead of the registry's for the table's shape (`checks_for`: a pairs
            table, one with a `pair` column, gets the pair checks too; a token table, with `tokens` and `tags`,
            the token checks instead of the per-row label checks).
        docs_dir: when given, the GX Data Docs (HTML) of every validation are built there.

    Returns:
        The audit report; `report.success` is False when something blocks training.
    """
    started = time.perf_counter()
    prepared = prepare_audit_table(table)
    prepare_seconds = time.perf_counter() - started
    chosen = checks_for(prepared) if checks is None else checks
    validated = validate_checks(prepared, chosen, config, config.examples, docs_dir)
    report = AuditReport.from_checks(validated.results, rows=len(prepared), strict=config.strict)
    return report.model_copy(update={
        "prepare_seconds": prepare_seconds, "data_docs": validated.data_docs, "docs_seconds": validated.docs_seconds,
    })


@dataclass(frozen=True)
class Validated:
    """The results of a set of checks, and their Data Docs when built."""

    results: list[CheckResult]
    data_docs: str | None = None
    docs_seconds: float = 0.0


def validate_checks(
    prepared: pd.DataFrame, checks: Iterable[type[Check]], settings: Any, examples: int,
    docs_dir: Path | None = None,
) -> Validated:
    """Plan and validate each check over a prepared table in one ephemeral GX context; `settings` is what
    every check's `plan` is given (the audit's config, or the comparison the change checks judge)."""
    context = _ephemeral_context()
    run_id = uuid.uuid4().hex[:12]
    source = context.data_sources.add_or_update_pandas(name=f"depthfinder_{run_id}")
    results = []
    for check_class in checks:
        started = time.perf_counter()
        result = _run_check(check_class(), prepared, settings, examples, context, source, run_id)
        results.append(result.model_copy(update={"seconds": time.perf_counter() - started}))
    if docs_dir is None:
        return Validated(results)
    started = time.perf_counter()
    data_docs = None
    try:
        data_docs = str(build_data_docs(context, Path(docs_dir).resolve()))
    except Exception as error:  # the verdict stands without its HTML rendering
        logging.getLogger(__name__).warning("GX Data Docs not built in %s: %s", docs_dir, error)
    return Validated(results, data_docs, time.perf_counter() - started)


def _run_check(
    check: Check, prepared: pd.DataFrame, settings: Any, examples: int, context: AbstractDataContext,
    source: PandasDatasource, run_id: str,
) -> CheckResult:
    """Plan and validate one check; a check that cannot run (or raises) fails with the reason."""
    missing = [column for column in check.requires if column not in prepared.columns]
    if missing:
        return _not_run(check, f"missing column(s): {', '.join(missing)}")
    try:
        plan = check.plan(prepared, settings)
        validation = _validate(context, source, f"{run_id}.{check.name}", check.name, plan)
    except Exception as error:  # one broken check must not hide the others' evidence
        return _not_run(check, f"the check raised {type(error).__name__}: {error}")
    return _check_result(check, plan, validation, prepared, examples)


def build_data_docs(context: AbstractDataContext, docs_dir: Path) -> Path:
    """Render the context's suites and validation results as static HTML under `docs_dir`; its index.html."""
    docs_dir.mkdir(parents=True, exist_ok=True)
    if DOCS_SITE not in (context.list_data_docs_sites() or {}):
        context.add_data_docs_site(DOCS_SITE, {
            "class_name": "SiteBuilder", "show_how_to_buttons": False,
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(docs_dir)},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        })
    context.build_data_docs(site_names=[DOCS_SITE])
    _drop_unused_images(docs_dir)
    return docs_dir / "index.html"


def _drop_unused_images(docs_dir: Path) -> None:
    """Delete the images GX copies but no page shows (3 MB of tutorial GIFs per site, logged with every run)."""
    pages = " ".join(path.read_text(encoding="utf-8", errors="replace") for path in docs_dir.rglob("*.html"))
    pages += " ".join(path.read_text(encoding="utf-8", errors="replace") for path in docs_dir.rglob("*.css"))
    for image in (docs_dir / "static" / "images").glob("*"):
        if image.is_file() and image.name not in pages:
            image.unlink()


def prepare_audit_table(table: pd.DataFrame) -> pd.DataFrame:
    """A shallow copy with a 0..n-1 index, a `row` column, each text's normalised form, key and usability (of a
    pairs table: each pair's, and each side's; see pairs.py)."""
    prepared = table.reset_index(drop=True)
    if "row" not in prepared.columns:
        prepared["row"] = np.arange(len(prepared), dtype=np.int64)
    if is_pairs_table(prepared):
        add_pair_columns(prepared)
    elif "text" in prepared.columns:
        prepared[NORMALIZED_COLUMN], prepared[KEY_COLUMN] = normalized_texts_and_keys(prepared["text"])
        prepared[USABLE_COLUMN] = has_usable_token(prepared["text"])
    return prepared


def _ephemeral_context() -> AbstractDataContext:
    """An in-memory GX context with progress bars off."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # GX pins this module's logger at INFO on import, only to announce a temporary docs folder.
    logging.getLogger(ProgressBarsConfig.__module__).setLevel(logging.WARNING)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


def _validate(
    context: AbstractDataContext, source: PandasDatasource, name: str, asset_name: str, plan: CheckPlan
) -> ExpectationSuiteValidationResult:
    """Validate `plan.frame` against `plan.expectations` through a suite and a validation definition."""
    import great_expectations as gx

    asset = source.add_dataframe_asset(name=asset_name)
    batch_definition = asset.add_batch_definition_whole_dataframe(name="whole")
    suite = context.suites.add_or_update(gx.ExpectationSuite(name=name, expectations=plan.expectations))
    definition = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=name, data=batch_definition, suite=suite)
    )
    return definition.run(batch_parameters={"dataframe": plan.frame}, result_format=RESULT_FORMAT)


def _check_result(
    check: Check, plan: CheckPlan, validation: ExpectationSuiteValidationResult, table: pd.DataFrame, examples: int,
) -> CheckResult:
    """Turn one check's GX validation result into a CheckResult with evidence."""
    failed = [result for result in validation.results if not result.success]
    failing = sorted({index for result in failed for index in result.result.get("unexpected_index_list") or []})
    severities = [OUR_SEVERITY[_severity_name(result.expectation_config.severity)] for result in failed]
    severity = "error" if "error" in severities else ("warning" if severities else check.severity)
    observed: dict[str, Any] = {}
    failing_rows: list[int] = []
    suspects = plan.suspects or []
    if check.counts_rows:
        failing_rows = [int(row) for row in table.loc[failing, "row"]]
        observed = {"rows": len(failing), "fraction": round(len(failing) / max(len(table), 1), 6)}
        suspects = _suspects(table, plan.frame, failing) if plan.suspects is None else suspects
    observed.update(plan.observed)
    if failed:
        observed["failed_expectations"] = [_describe(result) for result in failed]
    observed = to_jsonable(observed)
    return CheckResult(
        name=check.name, category=check.category, severity=severity, success=not failed,
        headline=check.headline(observed), observed=observed,
        examples=check.examples(table, plan, failing, examples) if failing and examples else [],
        evidence=list(check.evidence), description=check.description, failing_rows=failing_rows,
        suspects=suspects,
    )


def _suspects(table: pd.DataFrame, frame: pd.DataFrame, failing: list[Any]) -> list[dict[str, Any]]:
    """The failing rows' file row, text and label, and the likely label where the check has one (its derived frame
    shares the table's index)."""
    columns = [column for column in ("row", "text", PAIR_COLUMN, "label") if column in table.columns]
    rows = table.loc[failing, columns]
    if "likely_label" in frame.columns:
        rows = rows.assign(likely_label=frame.loc[failing, "likely_label"])
    return to_jsonable(rows.to_dict(orient="records"))


def _severity_name(severity: Any) -> str:
    """A GX FailureSeverity (enum or str) as its lower-case name."""
    return str(getattr(severity, "value", severity)).lower()


def _describe(result: Any) -> str:
    """One failed expectation as 'type(column): why', plus the GX error when it raised."""
    config = result.expectation_config
    text = f"{config.type}({config.kwargs.get('column', '')})"
    why = (config.meta or {}).get("why")
    text = f"{text}: {why}" if why else text
    errors = _exception_messages(result.exception_info)
    return f"{text} [raised: {errors[0]}]" if errors else text


def _exception_messages(info: dict[str, Any] | None) -> list[str]:
    """Messages of the exceptions GX recorded (flat, or keyed by metric id)."""
    if not info:
        return []
    if "raised_exception" in info:
        return [str(info.get("exception_message"))] if info.get("raised_exception") else []
    return [message for nested in info.values() if isinstance(nested, dict) for message in _exception_messages(nested)]


def _not_run(check: Check, reason: str) -> CheckResult:
    """A check that could not run (a column it needs is missing, or it raised): it fails."""
    return CheckResult(
        name=check.name, category=check.category, severity=check.severity, success=False,
        headline=f"not run: {reason}", observed={"not_run": reason}, examples=[], description=check.description,
    )
