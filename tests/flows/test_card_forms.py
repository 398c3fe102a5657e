"""The model card's "how to load it" names each form the version has: the Hugging Face folder for a head-pooled
pretrained model, the sentence-transformers folder for a mean- or first-token-pooled one, neither for scratch; and
it says which form the version's MLflow model serves, with every form's test interval."""

from __future__ import annotations

import pytest

from depthfinder.encoder.verdict import Deployment, Variant
from depthfinder.flows.card import _loading, served_sentence
from depthfinder.flows.summary import RunSummary
from depthfinder.tracking.records import ModelVersionRef


@pytest.mark.parametrize(("family", "hf_folder", "forms"), [
    ("pretrained", None, {"sentence-transformers"}),
    ("pretrained", "hf", {"hf"}),
    ("all-MiniLM-L6-v2", None, {"sentence-transformers"}),  # a checkpoint's family is named after it
    ("scratch", None, set()),
])
def test_the_card_says_how_to_export_each_form_the_version_has(family, hf_folder, forms) -> None:
    deployment = Deployment(metric="macro_f1", margin=0.01, variants=[], sentence="", hf_folder=hf_folder)
    model = ModelVersionRef(name="m", version="2", uri="models:/m/2", family=family, depth=2)

    text = _loading(RunSummary(data_hash="d", model=model, deployment=deployment))

    assert {form for form in ("hf", "sentence-transformers") if f"--format {form}`" in text} == forms
    assert ('SentenceTransformer("DIR")' in text) == ("sentence-transformers" in forms)


def test_the_card_names_the_form_the_alias_serves_and_each_forms_test_interval() -> None:
    def form(name: str, f1: float, shipped: bool) -> Variant:
        return Variant(name=name, metrics={"macro_f1": f1}, latency_ms={"b1_p50": 1.0}, size_mb=1.0, shipped=shipped,
                       metric_low=f1 - 0.03, metric_high=f1 + 0.02)

    deployment = Deployment(metric="macro_f1", margin=0.01, sentence="", variants=[
        form("torch", 0.912, True), form("onnx-int8", 0.905, True), form("onnx", 0.912, False)])
    model = ModelVersionRef(name="ui", version="2", uri="models:/ui/2", family="scratch", depth=1)

    promoted = served_sentence(RunSummary(data_hash="d", model=model, deployment=deployment, promoted=True))
    kept = served_sentence(RunSummary(data_hash="d", model=model, deployment=deployment, promoted=False))

    assert promoted.startswith("`models:/ui@champion` (version 2; MLflow pyfunc, `depthfinder predict`) serves the "
                               "**torch** form: test macro_f1 0.912 [0.882, 0.932]")
    assert "int8 ONNX (test macro_f1 0.905 [0.875, 0.925], 1.00 MiB)" in promoted and "ONNX (fp32)" not in promoted
    assert kept.startswith("`models:/ui@challenger`")


def test_the_card_says_the_served_model_carries_the_pruned_vocabulary_and_what_it_saved() -> None:
    from depthfinder.encoder.verdict import Pruning

    def form(name: str, f1: float, size: float, shipped: bool, pruned: bool = False) -> Variant:
        return Variant(name=name, metrics={"macro_f1": f1}, latency_ms={"b1_p50": 1.0}, size_mb=size,
                       shipped=shipped, pruned=pruned)

    pruning = Pruning(kept=8773, vocabulary=30522, min_count=1, saved_mb=33.8, saved_share=0.573, bundle="b")
    variants = [form("torch", 0.912, 59.0, True), form("torch-pruned", 0.910, 25.2, True, True),
                form("onnx-int8", 0.905, 6.4, True, True), form("onnx", 0.91, 25.3, False, True)]
    deployment = Deployment(metric="macro_f1", margin=0.01, sentence="", variants=variants, pruning=pruning)
    model = ModelVersionRef(name="ui", version="2", uri="models:/ui/2", family="minilm", depth=2)

    served = served_sentence(RunSummary(data_hash="d", model=model, deployment=deployment, promoted=True))

    assert "serves the **torch** form with its vocabulary pruned (kept 8,773 of 30,522 tokens, saving 33.8 MiB " \
        "(57%)): test macro_f1 0.910, 25.20 MiB" in served
    assert "int8 ONNX (test macro_f1 0.905, 6.40 MiB, pruned vocabulary)" in served
    refused = deployment.model_copy(update={"variants": [variants[0], variants[1].model_copy(
        update={"shipped": False}), variants[2]]})
    unpruned = served_sentence(RunSummary(data_hash="d", model=model, deployment=refused, promoted=True))
    assert "serves the **torch** form: test macro_f1 0.912, 59.00 MiB" in unpruned and "pruned (" not in unpruned


def test_a_summary_written_when_the_deployment_margin_was_called_tolerance_still_reads() -> None:
    written = RunSummary(data_hash="d", deployment=Deployment(metric="macro_f1", margin=0.02, variants=[],
                                                              sentence="torch only")).to_dict()
    older = {**written, "deployment": {("tolerance" if key == "margin" else key): value
                                       for key, value in written["deployment"].items()}}

    read = RunSummary.from_dict(older)

    assert "margin" in written["deployment"] and "tolerance" not in written["deployment"]
    assert read.deployment.margin == 0.02 and read == RunSummary.from_dict(written)


def test_the_card_of_a_model_of_token_labels_says_it_answers_with_tags_and_spans_and_which_pipeline_loads_it() -> None:
    deployment = Deployment(metric="entity_f1", margin=0.01, variants=[], sentence="", hf_folder="hf")
    model = ModelVersionRef(name="ner", version="3", uri="models:/ner/3", family="pretrained", depth=2,
                            outputs=["tags", "spans"])

    text = _loading(RunSummary(data_hash="d", model=model, deployment=deployment))

    assert "# tags, spans" in text and "proba_" not in text and "confidence" not in text
    assert 'pipeline("token-classification", model="DIR", aggregation_strategy="first")' in text
    assert "text-classification" not in text


def test_the_card_of_a_classifier_still_says_label_confidence_and_probabilities() -> None:
    deployment = Deployment(metric="macro_f1", margin=0.01, variants=[], sentence="", hf_folder="hf")
    model = ModelVersionRef(name="m", version="2", uri="models:/m/2", family="pretrained", depth=2)

    text = _loading(RunSummary(data_hash="d", model=model, deployment=deployment))

    assert "# label, confidence, proba_<label>" in text and 'pipeline("text-classification", model="DIR")' in text
