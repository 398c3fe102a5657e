"""The model card's "how to load it" names each form the version has: the Hugging Face folder for a head-pooled
pretrained model, the sentence-transformers folder for a mean- or first-token-pooled one, neither for scratch."""

from __future__ import annotations

import pytest

from encoder.deployment import Deployment
from encoder.tracking.records import ModelVersionRef
from flows.card import _loading
from flows.summary import RunSummary


@pytest.mark.parametrize(("family", "hf_folder", "forms"), [
    ("pretrained", None, {"sentence-transformers"}),
    ("pretrained", "hf", {"hf"}),
    ("all-MiniLM-L6-v2", None, {"sentence-transformers"}),  # a checkpoint's family is named after it
    ("scratch", None, set()),
])
def test_the_card_says_how_to_export_each_form_the_version_has(family, hf_folder, forms) -> None:
    deployment = Deployment(metric="macro_f1", tolerance=0.01, variants=[], sentence="", hf_folder=hf_folder)
    model = ModelVersionRef(name="m", version="2", uri="models:/m/2", family=family, depth=2)

    text = _loading(RunSummary(data_hash="d", model=model, deployment=deployment))

    assert {form for form in ("hf", "sentence-transformers") if f"--format {form}`" in text} == forms
    assert ('SentenceTransformer("DIR")' in text) == ("sentence-transformers" in forms)
