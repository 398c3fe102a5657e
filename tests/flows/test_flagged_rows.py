"""The flagged-rows table (Prefect `flagged-rows`, MLflow `audit/flagged_rows.csv`) lists the rows each check
counts, and says how many each check flagged."""

from __future__ import annotations

from depthfinder.expectations.audit.checks.cross_split_duplicates import CrossSplitDuplicatesCheck
from depthfinder.expectations.audit.checks.suspected_label_noise import SuspectedLabelNoiseCheck
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.report import suspect_rows
from depthfinder.expectations.audit.run import run_audit
from depthfinder.flows import audit
from tests.expectations.audit.test_noise_and_imbalance import flip
from tests.expectations.planting import topics_table


def test_the_rows_the_noise_check_counts_are_the_rows_the_flagged_rows_table_lists(monkeypatch) -> None:
    """The noise check said "2 rows flagged" below its warning while the flagged-rows table said "all 3"
    and listed none of them (a passing check had no suspects). The table lists every row each check counts, and
    says how many each check flagged."""
    noisy, _ = flip(topics_table(2000), 0.01, seed=4)  # about 1 %: below the 2 % warning
    noisy.loc[noisy.index[1], "text"] = noisy.loc[noisy.index[0], "text"]  # and one exact copy across splits
    noisy.loc[noisy.index[1], "split"] = "test" if noisy.loc[noisy.index[0], "split"] != "test" else "train"
    report = run_audit(noisy, AuditConfig(), checks=[CrossSplitDuplicatesCheck, SuspectedLabelNoiseCheck])
    noise, copies = report.check("suspected_label_noise"), report.check("cross_split_duplicates")
    published = []
    monkeypatch.setattr(audit.TableArtifact, "create", lambda artifact: published.append(artifact.model_dump()))

    audit.publish_rows("flagged-rows", "rows the audit flagged", report.checks, 2, None)

    rows = suspect_rows(report.checks, 2)
    assert noise.success and noise.observed["rows"] > 0  # flagged, below the warning
    listed = {name: [row["row"] for row in rows if row["check"] == name] for name in (noise.name, copies.name)}
    assert len(listed[noise.name]) == noise.observed["rows"] and len(listed[copies.name]) == copies.observed["rows"]
    assert all(row["likely_label"] not in (None, row["label"]) for row in rows if row["check"] == noise.name)
    (table,) = published
    assert table["table"] == audit.shown_rows(rows)
    assert table["description"].startswith(
        f"{len(rows)} rows the audit flagged (all shown; {copies.name} {copies.observed['rows']}, {noise.name} "
        f"{noise.observed['rows']})")
