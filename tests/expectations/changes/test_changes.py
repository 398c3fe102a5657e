"""Each change since the champion's table is found by the measure meant for it, and leads to the right policy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from depthfinder.expectations.audit.report import FIGURE_WIDTH, cell
from depthfinder.expectations.changes.compare import (
    ADDED,
    FOREIGN,
    HELD_OUT,
    SEEN,
    ChampionScores,
    Comparison,
    comparison_table,
    rows_to_score,
    standing,
)
from depthfinder.expectations.changes.config import ChangesConfig
from depthfinder.expectations.changes.judge import judge_changes
from depthfinder.expectations.changes.report import (
    ChangeReport,
    Policy,
    changes_description,
    changes_markdown,
)
from depthfinder.expectations.table.datasets import DATASETS
from depthfinder.expectations.table.split import assign_splits

NIGHTLY = ChangesConfig(skip_minor=True)


def split(table: pd.DataFrame) -> pd.DataFrame:
    table = table.reset_index(drop=True)
    return assign_splits(table.assign(row=np.arange(len(table))), 0.1, 0.1, 1, True)


@pytest.fixture(scope="module")
def reviews() -> pd.DataFrame:
    return DATASETS["reviews-negation"].generate(3000, seed=1)


@pytest.fixture(scope="module")
def champion(reviews) -> pd.DataFrame:
    return split(reviews.iloc[:2000])


def judge(champion: pd.DataFrame, tonight: pd.DataFrame, config: ChangesConfig = NIGHTLY, **given) -> ChangeReport:
    return judge_changes(comparison_table(champion, split(tonight)), Comparison(config, "1", **given))


def failed(report: ChangeReport) -> dict[str, str]:
    return {check.name: check.severity for check in report.checks if not check.success}


def test_an_unchanged_table_changes_nothing_and_skips(champion, reviews) -> None:
    report = judge(champion, reviews.iloc[:2000].sample(frac=1, random_state=3))  # reordered: the same rows

    assert (report.rows_added, report.rows_removed, report.relabelled) == (0, 0, 0)
    assert failed(report) == {}
    assert report.policy.decision == "skip" and "version 1 stays champion" in report.policy.reason
    assert judge(champion, reviews.iloc[:2000], ChangesConfig(skip_minor=False)).policy.decision == "retrain"


def test_appended_rows_of_the_same_world_retrain_without_drift(champion, reviews) -> None:
    report = judge(champion, reviews)

    assert report.rows_added == 1000 and report.rows_removed == 0
    assert failed(report) == {"rows_added": "warning"}
    assert report.drift_auc is not None and report.drift_auc < 0.6  # same generator: indistinguishable
    assert report.label_shift.p_value > 0.01 and report.label_shift.psi < 0.05
    assert report.policy.decision == "retrain" and "rows_added" in report.policy.reason
    assert [e["row"] for e in report.check("rows_added").examples] == [2000, 2001, 2002, 2003, 2004]


def test_a_few_appended_rows_are_minor(champion, reviews) -> None:
    report = judge(champion, reviews.iloc[:2050])

    assert report.rows_added == 50 and failed(report) == {}
    assert report.policy.decision == "skip"


def test_relabelled_rows_are_found_by_text_and_stop_above_their_share(champion, reviews) -> None:
    flip = {"positive": "negative", "negative": "positive"}
    few, many = reviews.iloc[:2000].copy(), reviews.iloc[:2000].copy()
    few.loc[[5, 17, 40], "label"] = few.loc[[5, 17, 40], "label"].map(flip)
    many.loc[:199, "label"] = many.loc[:199, "label"].map(flip)

    some, most = judge(champion, few), judge(champion, many)

    assert some.relabelled == 3 and some.rows_added == 0 and some.rows_removed == 0
    assert sorted(e["row"] for e in some.check("relabelled_rows").examples) == [5, 17, 40]
    assert {e["was"] for e in some.check("relabelled_rows").examples} <= {"positive", "negative"}
    assert some.policy.decision == "retrain"  # corrected labels are worth a retrain
    assert most.relabelled == 200 and failed(most)["relabelled_rows"] == "error"
    assert most.policy.decision == "stop" and "relabelled_rows" in most.policy.reason


def test_a_new_class_is_named_and_retrains(champion, reviews) -> None:
    extra = reviews.iloc[2000:2300].assign(label="neutral")

    report = judge(champion, pd.concat([reviews.iloc[:2000], extra]))

    assert report.new_classes == ["neutral"] and report.vanished_classes == []
    assert failed(report)["new_or_vanished_classes"] == "warning"
    assert report.policy.decision == "retrain" and "new: neutral" in report.policy.reason
    assert judge(champion, reviews.iloc[:2000][lambda t: t["label"] == "positive"]).vanished_classes == ["negative"]


def test_a_shifted_label_mix_is_tested_and_retrains(champion, reviews) -> None:
    positives = reviews.iloc[2000:][lambda t: t["label"] == "positive"].iloc[:90]  # 4.5 %: under the row threshold
    report = judge(champion, pd.concat([reviews.iloc[:2000], positives]))

    assert report.rows_added == 90 and "rows_added" not in failed(report)
    assert report.label_shift.p_value < 1e-6 and report.label_shift.psi > 0.1
    assert failed(report) == {"label_shift": "warning"} and report.policy.decision == "retrain"


def test_the_label_mix_table_shows_each_sides_own_shares_of_its_rows(champion, reviews) -> None:
    """`added_rows 0` beside `added_share 0.0017` (the share smoothed for the PSI). A class no row added
    carries has share 0, and every share is its rows over its side's rows, in the table and in the observed mix."""
    positives = reviews.iloc[2000:][lambda t: t["label"] == "positive"].iloc[:90]
    check = judge(champion, pd.concat([reviews.iloc[:2000], positives])).check("label_shift")
    rows = {example["label"]: example for example in check.examples}

    assert rows["negative"]["added_rows"] == 0 and rows["negative"]["added_share"] == 0
    for side in ("champion", "added"):
        total = sum(example[f"{side}_rows"] for example in rows.values())
        for label, example in rows.items():
            assert example[f"{side}_share"] == round(example[f"{side}_rows"] / total, 4)
            assert check.observed[f"{side}_mix"][label] == example[f"{side}_share"]
    assert check.observed["psi"] > 0.1  # the PSI still sees the shift (on smoothed shares)


def test_rows_from_another_task_stop_the_night_with_the_tokens_that_tell(champion, reviews) -> None:
    topics = DATASETS["topics"].generate(400, seed=2)

    report = judge(champion, pd.concat([reviews.iloc[:2000], topics]))

    assert report.drift_auc > 0.95 and failed(report)["text_drift"] == "error"
    tokens = report.check("text_drift").examples
    assert tokens and all(token["more_in"] in ("added", "champion") for token in tokens)
    topic_words = " ".join(topics["text"]).lower()
    assert all(token["token"] in topic_words for token in tokens if token["more_in"] == "added")
    assert report.policy.decision == "stop" and "text_drift" in report.policy.reason
    assert "## text_drift" in changes_markdown(report)


def test_removed_test_rows_are_said_but_do_not_retrain(champion, reviews) -> None:
    kept = reviews.iloc[:2000][champion["split"].to_numpy() != "test"]

    report = judge(champion, kept)

    tested = int((champion["split"] == "test").sum())
    assert report.rows_removed == tested and report.champion_test_rows_gone == tested
    assert failed(report) == {"champion_test_rows": "warning"}
    assert report.check("champion_test_rows").headline == f"{tested} of its {tested} test rows gone"
    assert report.policy.decision == "skip"  # noted, not a reason to retrain on its own


def test_decay_on_the_rows_added_retrains_and_shows_what_the_champion_got_wrong(champion, reviews) -> None:
    table = comparison_table(champion, split(reviews.iloc[:2100]))
    added, tested = rows_to_score(table, NIGHTLY)
    wrong = {index: "negative" for index in added}  # the champion says negative to every new row
    scores = ChampionScores("macro_f1", on_new=0.33, on_test=0.9, new_rows=len(added), test_rows=len(tested),
                            predicted=wrong)

    decayed = judge_changes(table, Comparison(NIGHTLY, "1", champion=scores))
    steady = judge_changes(table, Comparison(NIGHTLY, "1", champion=ChampionScores(
        "macro_f1", on_new=0.88, on_test=0.9, new_rows=len(added), test_rows=len(tested))))

    assert len(added) == 100 and len(tested) == int((champion["split"] == "test").sum())
    assert failed(decayed) == {"champion_decay": "warning"} and decayed.policy.decision == "retrain"
    assert decayed.champion_on_new.on_new == 0.33 and decayed.champion_on_new.rows == 100
    examples = decayed.check("champion_decay").examples
    assert examples and all(e["label"] == "positive" and e["champion_said"] == "negative" for e in examples)
    assert failed(steady) == {} and steady.policy.decision == "skip"


def test_changed_settings_retrain_even_when_the_data_did_not_change(champion) -> None:
    report = judge_changes(comparison_table(champion, champion), Comparison(NIGHTLY, "1",
                                                                              settings_changed=("config_hash",)))

    assert report.policy.decision == "retrain" and "config_hash" in report.policy.reason
    assert report.settings_changed == ["config_hash"]


def test_the_report_round_trips_through_json(champion, reviews) -> None:
    report = judge(champion, reviews)

    assert ChangeReport.from_dict(report.to_dict()).to_dict() == report.to_dict()
    assert report.to_dict()["policy"] == {"decision": "retrain", "reason": report.policy.reason, "overridden": None}


@pytest.mark.parametrize("share", [0.05, 0.20, 0.45])
def test_a_block_of_another_task_is_found_row_by_row_even_when_in_domain_rows_dilute_it(
    champion, reviews, share: float
) -> None:
    """1,000 rows added, of which `share` are news sentences labelled as reviews and the rest new reviews: the
    pooled AUC falls with the block's share, but the block is counted row by row, within a few percent, and
    stops the night once it is more than 5 % of the champion's table (2,000 rows: 100 rows)."""
    foreign = round(1000 * share)
    news = DATASETS["topics"].generate(foreign, seed=3).assign(label="positive")
    tonight = pd.concat([reviews.iloc[:2000], reviews.iloc[2000:3000 - foreign], news])

    report = judge(champion, tonight)

    assert report.rows_added == 1000
    assert abs(report.foreign_rows - foreign) <= 0.05 * foreign + 10
    assert report.foreign_share == pytest.approx(report.foreign_rows / 2000, abs=1e-6)
    stops = foreign > 100
    assert (failed(report).get("foreign_rows") == "error") == stops
    assert (report.policy.decision == "stop") == (stops or report.drift_auc >= 0.95)
    if stops:
        assert "foreign_rows" in report.policy.reason
        examples = report.check("foreign_rows").examples
        assert examples and set(e["row"] for e in examples) <= set(range(3000 - foreign, 3000))


def test_the_foreign_share_says_of_what_it_is_a_share(champion, reviews) -> None:
    """`foreign_share 0.173` is a share of the champion's table, read as one of the rows added (0.867).
    Both shares are reported, each named for its base, and the headline's words match the figures."""
    news = DATASETS["topics"].generate(300, seed=3).assign(label="positive")

    report = judge(champion, pd.concat([reviews.iloc[:2000], reviews.iloc[2000:2100], news]))
    headline = report.check("foreign_rows").headline

    assert report.rows_added == 400 and report.foreign_rows > 250
    assert report.foreign_share == pytest.approx(report.foreign_rows / report.rows_before, abs=1e-6)
    assert report.foreign_share_of_added == pytest.approx(report.foreign_rows / report.rows_added, abs=1e-4)
    assert (f"{report.foreign_rows} of 400 rows added look foreign ({report.foreign_share_of_added:.1%} of the rows "
            f"added, {report.foreign_share:.1%} of the champion's table)") in headline
    assert ChangeReport.from_dict(report.to_dict()).foreign_share_of_added == report.foreign_share_of_added


def test_the_champions_decay_is_judged_on_the_rows_that_are_not_foreign(champion, reviews) -> None:
    """The champion labels every new review right and every foreign row wrong: decay over all rows added would
    retrain on the foreign rows; judged on the rest, there is none, and the foreign block is reported apart."""
    news = DATASETS["topics"].generate(60, seed=4).assign(label="positive")
    tonight = split(pd.concat([reviews.iloc[:2000], reviews.iloc[2000:2940], news]))
    table = comparison_table(champion, tonight)
    added, tested = rows_to_score(table, NIGHTLY)
    is_news = table.loc[added, "text"].isin(news["text"])
    said = table.loc[added, "label"].astype("str").where(~is_news, "negative")  # right on reviews, wrong on news
    scores = ChampionScores("accuracy", on_new=float((said == table.loc[added, "label"]).mean()), on_test=1.0,
                            new_rows=len(added), test_rows=len(tested), predicted=said.to_dict())

    report = judge_changes(table, Comparison(NIGHTLY, "1", champion=scores))

    decay = report.champion_on_new
    assert decay.on_new == pytest.approx(0.94)  # 60 of 1,000 rows wrong, all of them news
    assert decay.on_rest >= 0.99 and decay.on_foreign <= 0.5  # the block holds the news (and a few flagged by chance)
    assert decay.on_new_low <= decay.on_new <= decay.on_new_high
    assert "champion_decay" not in failed(report)  # 60 foreign rows: 3 % of the table, reported, no stop
    assert "not foreign" in report.check("champion_decay").headline


def test_a_champions_table_whose_labels_look_alike_is_the_same_table(champion, reviews) -> None:
    """A champion's table kept before labels were normalised: its spellings are tonight's classes."""
    spelled = champion.assign(label=champion["label"].map({"positive": "positive\u200b", "negative": " negative"}))

    report = judge(spelled, reviews.iloc[:2000])

    assert (report.rows_added, report.rows_removed, report.relabelled) == (0, 0, 0)
    assert failed(report) == {} and report.new_classes == []


def test_each_row_of_tonight_stands_where_the_champion_learned_or_was_tested_on_it(champion, reviews) -> None:
    """A row whose text the champion trained or validated on is seen, one of its test split held out (relabelled
    too: neither model learned from it), a new one added, and a new one the foreign check flagged foreign."""
    news = DATASETS["topics"].generate(40, seed=5).assign(label="positive")
    tonight = split(pd.concat([reviews.iloc[:2000], reviews.iloc[2000:2100], news]))
    test_row = int(champion.loc[champion["split"] == "test", "row"].iloc[0])
    tonight.loc[tonight["row"] == test_row, "label"] = "flipped"
    flagged = set(tonight["row"].iloc[-40:-20])

    stands = standing(champion, tonight, flagged)

    by_row = dict(zip(tonight["row"], stands, strict=True))
    learned = champion.loc[champion["split"] != "test", "row"]
    tested = champion.loc[champion["split"] == "test", "row"]
    assert {by_row[row] for row in learned} == {SEEN}
    assert {by_row[row] for row in tested} == {HELD_OUT} and by_row[test_row] == HELD_OUT
    assert {by_row[row] for row in flagged} == {FOREIGN}
    assert {by_row[row] for row in range(2000, 2140) if row not in flagged} == {ADDED}


def markdown_tables(page: str) -> list[list[list[str]]]:
    """Every table of a Markdown page, each as its rows of cells (the header first, the rule line left out)."""
    tables, current = [], []
    for line in [*page.splitlines(), ""]:
        if line.startswith("|"):
            if not line.startswith("|---"):
                current.append([part.strip() for part in line.strip("|").split(" | ")])
        elif current:
            tables, current = [*tables, current], []
    return tables


def test_the_what_changed_page_fits_the_prefect_ui_and_a_forced_night_says_so(champion, reviews) -> None:
    """The Prefect UI never wraps a table cell (what passes the page's edge is cut off): the measures table holds
    measure, verdict and a figure of at most FIGURE_WIDTH characters, a longer figure is whole on a line below it,
    and the thresholds are a table of their own. A night --force retrained past a stop says so in the heading and
    in the artifact's description, outcome first."""
    news = DATASETS["topics"].generate(200, seed=3).assign(label="positive")
    stopped = judge(champion, pd.concat([reviews.iloc[:2000], news]))
    forced = stopped.model_copy(update={"policy": Policy(
        decision="retrain", reason=f"forced (--force); the comparison said stop: {stopped.policy.reason}",
        overridden="stop")})

    page = changes_markdown(forced)
    measures, thresholds, *_ = markdown_tables(page)

    assert stopped.policy.decision == "stop" and len(stopped.check("foreign_rows").headline) > FIGURE_WIDTH
    assert measures[0] == ["measure", "verdict", "figure"]
    assert max(len(value) for row in measures for value in row) <= FIGURE_WIDTH
    assert all(f"{cell(check.headline)}" in page for check in forced.checks)  # every figure whole, in or below
    assert [row[1] for row in thresholds[1:]] == [cell(forced.thresholds[check.name]) for check in forced.checks]
    assert page.splitlines()[0] == "# What changed since version 1: forced past stop"
    assert changes_markdown(stopped).splitlines()[0] == "# What changed since version 1: stop"
    assert changes_description(forced).startswith("Forced past stop: ")
    assert changes_description(stopped).startswith("Stop: ") and "foreign_rows" in changes_description(stopped)
