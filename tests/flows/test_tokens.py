"""Token labels end to end: a CoNLL file trains scratch and pretrained depths (a BERT's own token-classification
head) and students the best teaches word by word, the rule chooses by entity F1 resampled by sentence, the chosen
depth is registered and its forms are judged by the same metric; an unlabelled pool of untagged sentences is audited
like a split and taught to the students word by word; settings a tagger cannot take are one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from depthfinder.cli.main import main
from depthfinder.expectations.table.datasets import DATASETS
from depthfinder.flows.summary import RunSummary
from tests.encoder.tiny_checkpoint import tiny_checkpoint

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
CONFIG = """
data: {{path: names.conll, task: tokens}}
model: {{d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 40, pretrained: {checkpoint}}}
train: {{max_epochs: 2, min_epochs: 2, patience: 1, batch_size: 16, learning_rate: 0.003, finetune_max_epochs: 1,
        finetune_min_epochs: 1, finetune_patience: 1}}
sweep: {{depths: [1, 2], families: [scratch, pretrained], crossfit: off, halving: off, distill: on}}
"""


def write_conll(path: Path, sentences: int, seed: int) -> list[str]:
    """names-in-context as a CoNLL file (a token and its tag per line, a blank line between sentences); its texts."""
    table = DATASETS["names-in-context"].generate(sentences, seed)
    blocks = ["\n".join(f"{token} {tag}" for token, tag in zip(tokens, tags, strict=True))
              for tokens, tags in zip(table["tokens"], table["tags"], strict=True)]
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return [" ".join(tokens) for tokens in table["tokens"]]


PLANTED = 20  # labelled sentences planted in the pool, shouted


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory) -> tuple[Path, RunSummary]:
    folder = tmp_path_factory.mktemp("tokens")
    texts = write_conll(folder / "names.conll", 240, 1)
    fresh = [" ".join(tokens) for tokens in DATASETS["names-in-context"].generate(120, 9)["tokens"]]
    pool = [*fresh, *(text.upper() for text in texts[:PLANTED])]  # a token per line, no tag: a pool's CoNLL
    (folder / "pool.conll").write_text("\n\n".join("\n".join(text.split()) for text in pool) + "\n")
    checkpoint = tiny_checkpoint(folder / "bert", texts, layers=2)
    (folder / "run.yaml").write_text(CONFIG.format(checkpoint=checkpoint))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        assert main(["run", "--config", "run.yaml", "--unlabeled", "pool.conll", "--summary-json",
                     "summary.json"]) == 0
    return folder, RunSummary.from_dict(json.loads((folder / "summary.json").read_text()))


def test_a_tagger_trains_scratch_and_pretrained_depths_chosen_by_entity_f1_and_registered(run) -> None:
    _, summary = run
    plain = [c for c in summary.candidates if " distilled from " not in c.family]
    assert sorted((c.family, c.depth) for c in plain) == [("bert", 1), ("bert", 2), ("scratch", 1), ("scratch", 2)]
    students = [c for c in summary.candidates if " distilled from " in c.family]
    assert students  # taught per word by the best (distill: on), each judged beside the plain ones
    assert all(c.status == "trained" and {"entity_f1", "entity_macro_f1"} <= set(c.metrics)
               for c in summary.candidates)
    assert summary.rule.metric == "entity_f1" and "entity_f1" in summary.rule.reason
    assert summary.model is not None and summary.model.version == "1"
    assert summary.deployment is not None and all("entity_f1" in variant.metrics
                                                  for variant in summary.deployment.variants)


def test_the_pool_leaves_out_copies_of_labelled_sentences_and_teaches_the_students_its_new_ones(run) -> None:
    _, summary = run
    pool = summary.pool
    assert pool.texts == 120 + PLANTED and pool.of_held_out + pool.of_train >= PLANTED
    students = [c for c in summary.candidates if " distilled from " in c.family]
    assert pool.taught > 0 and all(c.taught_texts == pool.taught for c in students)
    assert summary.rows_to_label is None  # a tagger's pool teaches: it bounds no depth, so asks for no labels
    assert not pool.evidence and summary.pool.sentence().endswith(
        f"{pool.taught:,} taught to students (a tagger's pool teaches; it is no evidence).")


def test_the_table_shows_each_depths_entity_f1(run, capsys) -> None:
    from depthfinder.flows.report import candidate_rows

    _, summary = run
    header, rows = candidate_rows(summary.candidates)
    column = header.index("val entity-F1")
    assert [float(row[column]) for row in rows] == [round(c.metrics["entity_f1"], 3) for c in summary.candidates]


@pytest.mark.parametrize(("flags", "says"), [
    (["--metric", "macro_f1"], "token labels are scored by their entities"),
    (["--unlabeled", "pool.conll", "--distill", "off"], "--task tokens does not take --unlabeled with --distill off"),
    (["--unlabeled", "pool.conll", "--labels", "labels.csv"], "--task tokens does not take --labels"),
    (["--pretrained-pooling", "head"], "a model of token labels labels every token"),
])
def test_settings_a_tagger_cannot_take_are_one_line_and_exit_2(tmp_path, capsys, flags, says) -> None:
    write_conll(tmp_path / "names.conll", 40, 2)
    code = main(["run", "--data", str(tmp_path / "names.conll"), "--task", "tokens", *flags,
                 "--workdir", str(tmp_path / "work")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and says in err[0]
    assert not (tmp_path / "work" / "data").exists()  # refused before anything was read or written


SEARCH = """
data: {path: names.conll, task: tokens}
model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 40}
train: {max_epochs: 2, min_epochs: 2, patience: 1, batch_size: 16, learning_rate: 0.003}
sweep: {depths: [1, 2, 3], strategy: search, crossfit: off}
"""


def test_the_search_strategy_screens_a_taggers_depths_by_probes_on_each_token(prefect_server, tmp_path,
                                                                               monkeypatch) -> None:
    write_conll(tmp_path / "names.conll", 160, 3)
    (tmp_path / "search.yaml").write_text(SEARCH)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--config", "search.yaml", "--summary-json", "summary.json"]) == 0
    summary = RunSummary.from_dict(json.loads((tmp_path / "summary.json").read_text()))
    screened = [c for c in summary.candidates if c.status == "screened"]
    assert screened and all("entity_f1" in c.metrics for c in screened)  # a probe's tags scored by their entities
    (search,) = summary.search
    assert search.screened == [c.depth for c in screened] and 3 in search.confirmed
    assert set(search.screened) | set(search.confirmed) == {1, 2, 3}
    assert summary.rule.metric == "entity_f1" and summary.model is not None


def test_a_token_metric_is_refused_for_a_label_per_text(tmp_path, capsys) -> None:
    (tmp_path / "t.csv").write_text("text,label\na,x\nb,y\n")
    assert main(["run", "--data", str(tmp_path / "t.csv"), "--metric", "entity_f1",
                 "--workdir", str(tmp_path / "work")]) == 2
    assert "entity_f1 scores token labels (--task tokens)" in capsys.readouterr().err
