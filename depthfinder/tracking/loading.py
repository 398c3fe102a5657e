"""Open a logged or registered model that depthfinder can vouch for, without running any code that came with it.

`mlflow.pyfunc.load_model` executes whatever a model is: the code file of a models-from-code model,
the cloudpickle of another. Anyone who can write to a registry can put such a model under a name
or an alias depthfinder reads (`predict --model`, the champion that what-changed and promotion
score). So depthfinder reads only the model's description (its MLmodel file, YAML), refuses what is
not a depthfinder model in one line, and loads a depthfinder model from its data alone: the bundle
artifact (weights with `weights_only=True`, a tokenizer.json, a JSON config) through encoder.bundle.
"""

from __future__ import annotations

import tempfile

import mlflow
from mlflow.exceptions import MlflowException
from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

from depthfinder.encoder.serving import TextClassifier, load_bundle

PYFUNC = "python_function"
# A models-from-code pyfunc: its loader module, and the key naming its code file.
MODELS_FROM_CODE = ("mlflow.pyfunc.loaders.code_model", "model_code_path")
BUNDLE_ARTIFACT = "bundle"
METADATA_KEYS = ("family", "depth", "labels")


def foreign(flavors: dict, metadata: dict | None) -> str | None:
    """What a model is when it is not a depthfinder model, in a phrase; None when it is one."""
    pyfunc = flavors.get(PYFUNC)
    if pyfunc is None:
        return f"it has no {PYFUNC} flavour (flavours: {', '.join(sorted(flavors)) or 'none'})"
    loader, code_key = MODELS_FROM_CODE
    if "python_model" in pyfunc and code_key not in pyfunc:
        return f"its python_model is a cloudpickle ({pyfunc['python_model']}), which runs code when loaded"
    if pyfunc.get("loader_module") != loader or code_key not in pyfunc:
        return f"its {PYFUNC} flavour loads with {pyfunc.get('loader_module')!r}"
    if BUNDLE_ARTIFACT not in pyfunc.get("artifacts", {}):
        return f"it carries no {BUNDLE_ARTIFACT!r} artifact"
    missing = [key for key in METADATA_KEYS if key not in (metadata or {})]
    return f"its metadata lacks {', '.join(missing)}" if missing else None


def _description(model_uri: str):
    """The model's MLmodel, read without loading the model; ValueError when there is none."""
    try:
        return mlflow.models.get_model_info(model_uri)
    except (MlflowException, OSError) as exc:
        reason = str(getattr(exc, "message", exc)).strip().splitlines()[0]
        raise ValueError(f"cannot read model {model_uri}: {reason}") from None


def vouch(model_uri: str) -> dict[str, str]:
    """The path within a depthfinder model of each of its artifacts (the bundle, and the Hugging Face folder and
    the ONNX variants where it has them), by name; ValueError naming what the model is otherwise."""
    info = _description(model_uri)
    if problem := foreign(info.flavors, info.metadata):
        raise ValueError(f"{model_uri} is not a depthfinder model: {problem}; depthfinder loads only its own "
                         "models, and never runs code that came with one")
    return {name: artifact["path"] for name, artifact in info.flavors[PYFUNC]["artifacts"].items()}


def open_classifier(model_uri: str) -> TextClassifier:
    """The classifier of a depthfinder model (see vouch), loaded from its bundle's data."""
    bundle = vouch(model_uri)[BUNDLE_ARTIFACT]
    with tempfile.TemporaryDirectory(prefix="depthfinder-model-") as scratch:
        try:
            local = get_artifact_repository(model_uri).download_artifacts(bundle, scratch)
        except (MlflowException, OSError) as exc:
            reason = str(getattr(exc, "message", exc)).strip().splitlines()[0]
            raise ValueError(f"cannot fetch the bundle of model {model_uri}: {reason}") from None
        return load_bundle(local)
