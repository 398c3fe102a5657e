"""The MLflow pyfunc model that serves a bundle on raw text, logged as "models from code".

MLflow copies this file into the logged model and executes it on load; the last line hands
it the model object, so nothing is pickled. The bundle folder (see encoder.serving) travels
as the artifact "bundle" and is loaded in `load_context`. Loading needs no depthfinder: this
file imports only mlflow and encoder.serving, which travels with it as `depthfinder_serving`
(MLflow's code_paths, with the scratch network as `depthfinder_network`), and the model's
declared requirements.

Input: a DataFrame with a string column `text` (a Series or a list of strings also works); a model of pairs
takes string columns `text` and `pair` (or a list of (text, pair)).
Output: a DataFrame with `label` (the most probable class), `confidence` (its probability)
and `proba_<label>` per class in class-id order, so callers can threshold or calibrate.

A model of token labels reads `text` as whitespace-separated words (raw text works: it is split at white space, so
punctuation attached to a word is part of that word) and answers `tags` (each word's tag, joined by spaces) and
`spans` (its entities, a list of objects `text`, `type`, `start`, `end`: character offsets in the text), declared in
the signature as an MLflow Array of Object, not as a JSON string.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from mlflow.models import ModelSignature, set_model
from mlflow.pyfunc import PythonModel, PythonModelContext
from mlflow.types import ColSpec, Schema
from mlflow.types.schema import Array, Object, Property

try:  # served: the runtime travels beside this file
    from depthfinder_serving import (
        CONFIDENCE_COLUMN,
        LABEL_COLUMN,
        SPANS_COLUMN,
        TAGS_COLUMN,
        TEXT_COLUMN,
        load_bundle,
        predictions_frame,
        proba_columns,
        texts_from_input,
    )
except ImportError:  # inside depthfinder
    from depthfinder.encoder.serving import (
        CONFIDENCE_COLUMN,
        LABEL_COLUMN,
        SPANS_COLUMN,
        TAGS_COLUMN,
        TEXT_COLUMN,
        load_bundle,
        predictions_frame,
        proba_columns,
        texts_from_input,
    )

BUNDLE_ARTIFACT = "bundle"
# One entity of a token model's `spans` (encoder.serving.spans_of).
SPAN = Object([Property("text", "string"), Property("type", "string"), Property("start", "long"),
               Property("end", "long")])


def text_classifier_signature(labels: list[str], inputs: Sequence[str] = (TEXT_COLUMN,),
                              tokens: bool = False) -> ModelSignature:
    """Input: the string column `text` (and `pair`, for a model of pairs); output: label, confidence and one
    probability per class, or, for a model of token labels (`tokens`), `tags` and `spans`."""
    columns = Schema([ColSpec("string", column) for column in inputs])
    if tokens:
        return ModelSignature(inputs=columns, outputs=Schema([ColSpec("string", TAGS_COLUMN),
                                                              ColSpec(Array(SPAN), SPANS_COLUMN)]))
    outputs = Schema(
        [ColSpec("string", LABEL_COLUMN), ColSpec("double", CONFIDENCE_COLUMN)]
        + [ColSpec("double", column) for column in proba_columns(labels)]
    )
    return ModelSignature(inputs=columns, outputs=outputs)


class TextClassifierModel(PythonModel):
    """Raw text in, label and class probabilities out (a model of token labels: tags and spans); the bundle is the
    artifact "bundle"."""

    def load_context(self, context: PythonModelContext) -> None:
        self.classifier = load_bundle(Path(context.artifacts[BUNDLE_ARTIFACT]))

    def predict(
        self, context: PythonModelContext, model_input: pd.DataFrame, params: dict[str, Any] | None = None
    ) -> pd.DataFrame:
        return predictions_frame(self.classifier, texts_from_input(model_input, self.classifier.inputs))


set_model(TextClassifierModel())
