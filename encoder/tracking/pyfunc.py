"""The MLflow pyfunc model that serves a bundle on raw text, logged as "models from code".

MLflow copies this file into the logged model and executes it on load; the last line hands
it the model object, so nothing is pickled. The bundle folder (see encoder.bundle) travels
as the artifact "bundle" and is loaded in `load_context`. Loading needs the installed
depthfinder package (for encoder.bundle and encoder.model), torch, tokenizers and mlflow.

Input: a DataFrame with a string column `text` (a Series or a list of strings also works).
Output: a DataFrame with `label` (the most probable class), `confidence` (its probability)
and `proba_<label>` per class in class-id order, so callers can threshold or calibrate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from mlflow.models import ModelSignature, set_model
from mlflow.pyfunc import PythonModel, PythonModelContext
from mlflow.types import ColSpec, Schema

from encoder.bundle import TextClassifier, load_bundle

BUNDLE_ARTIFACT = "bundle"
TEXT_COLUMN = "text"
LABEL_COLUMN = "label"
CONFIDENCE_COLUMN = "confidence"
PROBA_PREFIX = "proba_"


def proba_columns(labels: list[str]) -> list[str]:
    """Output column of each class's probability, in class-id order."""
    return [f"{PROBA_PREFIX}{label}" for label in labels]


def text_classifier_signature(labels: list[str]) -> ModelSignature:
    """Input: one string column `text`; output: label, confidence and one probability per class."""
    inputs = Schema([ColSpec("string", TEXT_COLUMN)])
    outputs = Schema(
        [ColSpec("string", LABEL_COLUMN), ColSpec("double", CONFIDENCE_COLUMN)]
        + [ColSpec("double", column) for column in proba_columns(labels)]
    )
    return ModelSignature(inputs=inputs, outputs=outputs)


def texts_from_input(model_input: object) -> list[str]:
    """The texts of a DataFrame's `text` column, a Series or a list; rejects non-strings by row."""
    if isinstance(model_input, pd.DataFrame):
        if TEXT_COLUMN not in model_input.columns:
            raise ValueError(f"input needs a '{TEXT_COLUMN}' column, got columns {list(model_input.columns)}")
        values = model_input[TEXT_COLUMN].tolist()
    elif isinstance(model_input, pd.Series | np.ndarray | list | tuple):
        values = list(model_input)
    elif isinstance(model_input, str):
        values = [model_input]
    else:
        raise TypeError(f"input must be a DataFrame with a '{TEXT_COLUMN}' column or a list of strings, "
                        f"got {type(model_input).__name__}")
    for row, value in enumerate(values):
        if not isinstance(value, str):
            raise ValueError(f"text in row {row} is {value!r}, expected a string")
    return [str(value) for value in values]  # plain str, also from numpy str_ values


def predictions_frame(classifier: TextClassifier, texts: list[str]) -> pd.DataFrame:
    """Label, confidence and per-class probabilities of each text, rows in input order."""
    probs = classifier.predict_proba(texts).astype(np.float64)  # (N, K)
    frame = pd.DataFrame(probs, columns=proba_columns(classifier.labels))
    frame.insert(0, LABEL_COLUMN, pd.Series([classifier.labels[k] for k in probs.argmax(axis=1)], dtype=str))
    frame.insert(1, CONFIDENCE_COLUMN, probs.max(axis=1))
    return frame


class TextClassifierModel(PythonModel):
    """Raw text in, label and class probabilities out; the bundle is the artifact "bundle"."""

    def load_context(self, context: PythonModelContext) -> None:
        self.classifier = load_bundle(Path(context.artifacts[BUNDLE_ARTIFACT]))

    def predict(
        self, context: PythonModelContext, model_input: pd.DataFrame, params: dict[str, Any] | None = None
    ) -> pd.DataFrame:
        return predictions_frame(self.classifier, texts_from_input(model_input))


set_model(TextClassifierModel())
