"""End to end with a pretrained family: one decision over scratch and pretrained depths, halving within the
pretrained family, the registered model holding only its layers, and the checkpoint's content in the fingerprint;
checkpoints in every form transformers loads get past the checks, and those it cannot load whole are refused in
one line before the audit."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import mlflow
import pandas as pd
import pytest
import torch
from mlflow import MlflowClient

from depthfinder.cli.main import main
from depthfinder.encoder.checkpoint import resolve_checkpoint
from depthfinder.encoder.serving import load_bundle
from depthfinder.expectations.table.datasets import DATASETS
from depthfinder.flows.summary import RunSummary
from depthfinder.selection.rule import choose_depth
from tests.encoder.tiny_checkpoint import (
    cut,
    resaved,
    tiny_checkpoint,
    with_config,
    with_legacy_names,
    with_task_head,
    without,
)

# The fine-tuning recipe's own budget stays its default 5 epochs: --max-epochs 3 bounds it.
CONFIG = """
data: {dataset: topics, dataset_rows: 600}
model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 32}
train: {patience: 2, batch_size: 32, learning_rate: 0.003, finetune_learning_rate: 0.003, finetune_min_epochs: 2}
sweep: {depths: [1, 2, 3, 4], families: [scratch, pretrained], crossfit: off}
"""


@pytest.fixture(scope="module")
def runs(prefect_server, tmp_path_factory):
    """A mixed sweep, then the same run again, and again with the checkpoint copied elsewhere."""
    folder = tmp_path_factory.mktemp("pretrained")
    checkpoint = tiny_checkpoint(folder / "tinybert", DATASETS["topics"].generate(600, 1)["text"], layers=4)
    shutil.copytree(checkpoint, folder / "copy")
    (folder / "run.yaml").write_text(CONFIG)
    summaries = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        for name, path in (("first", "tinybert"), ("again", "tinybert"), ("moved", "copy")):
            args = ["run", "--config", "run.yaml", "--pretrained", path, "--max-epochs", "3",
                    "--summary-json", f"{name}.json"]
            assert main(args) == 0
            summaries[name] = RunSummary.from_dict(json.loads((folder / f"{name}.json").read_text()))
    return folder, summaries, resolve_checkpoint(str(checkpoint))


def test_one_decision_over_both_families_names_them(runs) -> None:
    _, summaries, _ = runs
    summary = summaries["first"]

    assert [(c.family, c.depth) for c in summary.candidates] == [
        ("scratch", d) for d in (1, 2, 3, 4)] + [("tinybert", d) for d in (1, 2, 3, 4)]  # named after its folder
    chosen, other = summary.rule.selected_family, {"scratch": "tinybert", "tinybert": "scratch"}
    rule = summary.rule
    assert f"{chosen} depth {rule.selected_depth}" in rule.reason
    named = (f"at {other[chosen]} depth {rule.best_depth}" if rule.best_family == other[chosen]
             else f"; {other[chosen]} best macro_f1")  # the other family's best, as the best or beside it
    assert named in rule.reason
    assert choose_depth(summary.candidates, summary.rule.settings) == summary.rule
    assert {s.family for s in summary.rule.scores} <= {"scratch", "tinybert"}


def test_halving_ranks_pretrained_depths_on_the_fine_tuning_recipes_budget(runs) -> None:
    _, summaries, _ = runs
    summary = summaries["first"]

    (rung,) = summary.halving.rungs  # scratch trains 3 epochs in all: no room for a rung below its 10
    # halving keeps two; of those, depths outclassed by a cheaper scratch depth stop too (never the last)
    assert (rung.family, rung.epochs, rung.depths, len(rung.kept) + len(rung.outclassed)) == (
        "tinybert", 2, [1, 2, 3, 4], 2)
    assert rung.kept and not set(rung.kept) & set(rung.outclassed)
    pruned = [c for c in summary.candidates if c.status == "pruned"]
    assert {c.family for c in pruned} == {"tinybert"} and {c.epochs for c in pruned} == {2}
    assert sorted(c.depth for c in pruned) == sorted(set(rung.depths) - set(rung.kept))


def test_max_epochs_bounds_the_pretrained_candidates_too_and_a_setting_they_do_not_use_is_said_once(runs) -> None:
    """--max-epochs 3 caps the fine-tuning recipe's own 5 epochs; the scratch recipe's patience and learning rate,
    which the checkpoint's candidates do not use, are named in one line before training, with what they use."""
    from tests.flows.prefect_api import flow_run_logs, flow_runs_named

    folder, summaries, _ = runs
    summary = summaries["first"]
    pretrained = [c for c in summary.candidates if c.family == "tinybert"]
    run = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}").get_run(summary.mlflow_run_id)

    assert pretrained and max(c.epochs for c in pretrained) <= 3
    logs = [flow_run_logs(flow_run.id) for flow_run in flow_runs_named(run.info.run_name)]  # the skipped reruns too
    notes = [(said, line) for said in logs for line in said
             if line.startswith("not every setting given applies to every family")]
    assert len(notes) == 1 and "\n" not in notes[0][1]  # the reruns, skipped, train nothing and say nothing
    said, note = notes[0]
    assert said.index(note) < min(i for i, line in enumerate(said) if " epoch 1/" in line)  # before training
    assert "train.patience 2 (tinybert: train.finetune_patience 2 instead)" in note
    assert "train.learning_rate 0.003 (tinybert: train.finetune_learning_rate 0.003 instead)" in note
    assert "max_epochs" not in note and "d_model" not in note  # it bounds both; scratch uses its width


def test_the_registered_model_holds_only_its_layers_and_answers_raw_text(runs) -> None:
    folder, summaries, checkpoint = runs
    summary = summaries["first"]
    model = summary.model
    client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    version = client.get_model_version("depthfinder", model.version)

    assert (model.family, model.depth) == (summary.rule.selected_family, summary.selected_depth)
    shipped = max((c for c in summary.candidates if (c.family, c.depth) == (model.family, model.depth)),
                  key=lambda c: c.metrics["macro_f1"])
    pruned = summary.deployment.bundle  # the pruned vocabulary, when the deployment gate shipped it
    assert model.size_mb == (sum(p.stat().st_size for p in Path(pruned).iterdir()) / 2**20 if pruned
                             else shipped.cost.bundle_mb) > 0
    assert model.size_mb <= shipped.cost.bundle_mb
    assert version.tags["pretrained"] == checkpoint.content_hash
    mlflow.set_tracking_uri(f"sqlite:///{folder / 'mlflow.db'}")
    served = mlflow.pyfunc.load_model("models:/depthfinder@champion")
    predictions = served.predict(pd.DataFrame({"text": ["a recipe with garlic and basil", "the match ended 2-1"]}))
    assert len(predictions) == 2 and set(predictions["label"]) <= set(DATASETS["topics"].generate(50, 1)["label"])
    pretrained = [c for c in summary.candidates if c.family == "tinybert" and c.bundle]
    for candidate in pretrained:  # every pretrained bundle, the one served included, keeps only its layers
        assert len(load_bundle(Path(candidate.bundle)).network.encoder.encoder.layer) == candidate.depth
    sizes = [c.cost.bundle_mb for c in sorted(pretrained, key=lambda c: c.depth)]
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)


def test_the_same_checkpoint_anywhere_is_the_same_model(runs) -> None:
    _, summaries, _ = runs
    assert summaries["again"].skipped and summaries["moved"].skipped
    assert summaries["moved"].model.version == summaries["first"].model.version


def test_a_depth_above_the_checkpoints_layers_exits_2_before_any_work(runs, tmp_path, monkeypatch, capsys) -> None:
    folder, _, _ = runs
    monkeypatch.chdir(tmp_path)

    code = main(["run", "--dataset", "topics", "--pretrained", str(folder / "tinybert"), "--depths", "1,8"])

    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "depth 8 is beyond the 4 layers of the pretrained checkpoint" in err
    assert list(tmp_path.iterdir()) == []


def test_a_pretrained_candidate_serves_raw_text_through_mlflows_scoring_server(runs, tmp_path) -> None:
    """What `mlflow models serve` runs, driven in-process, for the deepest pretrained bundle."""
    from fastapi.testclient import TestClient
    from mlflow.pyfunc import scoring_server

    from depthfinder.tracking.registry import log_text_classifier

    folder, summaries, _ = runs
    deepest = max((c for c in summaries["first"].candidates if c.family == "tinybert" and c.bundle),
                  key=lambda c: c.depth)
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    with mlflow.start_run():
        uri = log_text_classifier(Path(deepest.bundle), input_example=["a match", "a recipe"])
    app = scoring_server.init(mlflow.pyfunc.load_model(uri))

    response = TestClient(app).post("/invocations", content=json.dumps({"dataframe_records": [{"text": "goal!"}]}),
                                    headers={"Content-Type": "application/json"})

    assert response.status_code == 200, response.text
    (row,) = response.json()["predictions"]
    expected = load_bundle(Path(deepest.bundle)).predict(["goal!"])
    assert row["label"] == expected[0]
    assert "transformers==" in Path(mlflow.pyfunc.get_model_dependencies(uri)).read_text()


def _poisoned(folder: Path) -> Path:
    """Only a pytorch_model.bin whose pickle would create `planted` in the folder when unpickled without
    weights_only."""
    resaved(folder, pickled=True)
    torch.save({**torch.load(folder / "pytorch_model.bin", weights_only=True), "extra": _Payload(folder / "planted")},
               folder / "pytorch_model.bin")
    return folder


class _Payload:
    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _drop(folder: Path, key: str) -> Path:
    from safetensors.torch import load_file, save_file

    state = load_file(folder / "model.safetensors")
    del state[key]
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


REFUSED = {
    "remote code (auto_map)": (lambda f: with_config(f, auto_map={"AutoModel": "modeling_x.X"}),
                               "it asks for code of its own"),
    "a truncated pytorch_model.bin": (lambda f: cut(resaved(f, pickled=True), "pytorch_model.bin"),
                                      "pytorch_model.bin is not a readable PyTorch weights file"),
    "a pickle that would run code": (_poisoned, "pytorch_model.bin is a pickle that holds more than tensors"),
    "a truncated model.safetensors": (lambda f: cut(f, "model.safetensors"),
                                      "model.safetensors is not a readable safetensors file"),
    "a missing shard": (lambda f: without(resaved(f, shards=2), "model-00001-of-00002.safetensors"),
                        "names the shard 'model-00001-of-00002.safetensors', which is not a file in the folder"),
    "a shape mismatch": (lambda f: with_config(f, intermediate_size=48),
                         "tensor encoder.layer.0.intermediate.dense.weight has shape [64, 32] in the weights"),
    "a missing encoder weight": (lambda f: _drop(f, "encoder.layer.1.attention.self.key.bias"),
                                 "the weights lack encoder.layer.1.attention.self.key.bias that config.json implies"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_checkpoint_transformers_cannot_load_whole_exits_2_in_one_line_before_the_audit(
    case: str, tmp_path: Path, monkeypatch, capsys
) -> None:
    import depthfinder.expectations.audit.run

    spoil, named = REFUSED[case]
    folder = spoil(tiny_checkpoint(tmp_path / "checkpoint", ["a text"], layers=2))
    monkeypatch.setattr(depthfinder.expectations.audit.run, "run_audit", lambda *a, **k: pytest.fail("the audit ran"))
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    capsys.readouterr()  # what building it printed

    code = main(["run", "--dataset", "topics", "--pretrained", str(folder)])

    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert named in err and str(folder) in err and "Traceback" not in err
    assert list((tmp_path / "work").iterdir()) == []  # no work folder, no MLflow store
    assert not (folder / "planted").exists()


# The two the CLI refused before (tests/encoder/test_checkpoint.py loads every form, and compares the weights).
ACCEPTED = {
    "LayerNorm gamma/beta names": with_legacy_names,
    "only pytorch_model.bin, of a BertForMaskedLM": lambda f: resaved(with_task_head(f, "masked-lm"), pickled=True),
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_a_checkpoint_transformers_loads_gets_past_every_check_to_the_run(case, tmp_path, monkeypatch) -> None:
    import depthfinder.flows.retrain
    import depthfinder.runtime.server

    reached: list[str] = []

    def retrain(**config):  # the run itself was reached: every check before it passed
        reached.append(config["model"].pretrained)
        raise SystemExit(0)

    folder = ACCEPTED[case](tiny_checkpoint(tmp_path / "checkpoint", ["a text"], layers=2))
    monkeypatch.setattr(depthfinder.runtime.server, "prefect_api", contextlib.nullcontext)
    monkeypatch.setattr(depthfinder.flows.retrain, "retrain", retrain)
    monkeypatch.chdir(tmp_path)

    with contextlib.suppress(SystemExit):
        main(["run", "--dataset", "topics", "--pretrained", str(folder)])
    assert reached == [[str(folder)]]  # model.pretrained: a list of one
