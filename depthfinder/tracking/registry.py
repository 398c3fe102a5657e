"""Log a bundle as an MLflow model, register it as `challenger`, and promote it to `champion`.

Plain functions over an MlflowClient, no Prefect. The promotion decision is the pure function
selection.promotion.should_promote; `promote_if_better` only applies it to the registry, and
`register_challenger` is the whole step: log, register, score both models, judge.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import mlflow
from mlflow.entities.model_registry import ModelVersion, RegisteredModel
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import RESOURCE_ALREADY_EXISTS, RESOURCE_DOES_NOT_EXIST, ErrorCode
from mlflow.tracking import MlflowClient

from depthfinder.encoder import model as network
from depthfinder.encoder import serving
from depthfinder.encoder.families import SERVING_PACKAGES, family_of
from depthfinder.encoder.serving import (
    ModelInput,
    bundle_inputs,
    inputs_frame,
    labels_tokens,
    output_columns,
    read_bundle_config,
    texts_from_input,
)
from depthfinder.encoder.verdict import Deployment
from depthfinder.runtime.interrupt import STOP
from depthfinder.selection.candidate import Candidate
from depthfinder.selection.promotion import Judgement, should_promote
from depthfinder.selection.settings import SelectionRule
from depthfinder.tracking import pyfunc
from depthfinder.tracking.history import CHALLENGER, CHAMPION, PREVIOUS_CHAMPION, move_alias
from depthfinder.tracking.loading import open_classifier
from depthfinder.tracking.records import KnownVersion, ModelVersionRef, Registration
from depthfinder.tracking.runs import TABLE_ARTIFACTS, SweepRun, use_store

# The logged model's requirements are its family's serving packages (encoder.families), pinned to the
# versions it was logged with. Given explicitly, MLflow skips its slow requirement inference (a
# subprocess that loads the model).

# Version tag of a judgement: pending from registration until the aliases it moves have moved.
JUDGED, PENDING, PROMOTED, NOT_PROMOTED = "judged", "pending", "promoted", "not promoted"
# Logging a models-from-code pyfunc passes the model object through one process-wide slot
# (mlflow.models.set_model), so two threads doing it at once could swap models. Our own calls
# take turns. (depthfinder loads models from their data, tracking.loading: no slot.)
_LOG_LOCK = threading.Lock()


def log_text_classifier(bundle_dir: Path, *, name: str = "model", input_example: list[ModelInput],
                        deployment: Deployment | None = None) -> str:
    """Log a bundle as a raw-text pyfunc model under the active run.

    Args:
        bundle_dir: A folder written by encoder.bundle.save_bundle.
        name: The logged model's name within the run.
        input_example: A few representative texts, stored with the model.
        deployment: The model's other forms (encoder.deployment): its Hugging Face folder travels with it as the
            artifact `hf`, the ONNX variants that ship and their measurements as `onnx`.

    Returns:
        The logged model's URI (`models:/<model_id>`).
    """
    if mlflow.active_run() is None:
        raise RuntimeError("log_text_classifier needs an active MLflow run (wrap it in mlflow.start_run())")
    inputs = bundle_inputs(bundle_dir)
    example = texts_from_input(list(input_example), inputs) if input_example else []  # ValueError on a bad one
    if not example:
        raise ValueError(f"input_example must be a non-empty list of {' and '.join(inputs)} inputs")
    cfg, labels = read_bundle_config(bundle_dir)
    with _LOG_LOCK, tempfile.TemporaryDirectory(prefix="depthfinder-code-") as code:  # logging runs the code file
        info = mlflow.pyfunc.log_model(
            name=name,
            python_model=Path(pyfunc.__file__),
            code_paths=_serving_code(Path(code)),
            artifacts={pyfunc.BUNDLE_ARTIFACT: str(bundle_dir), **_deployment_artifacts(deployment, Path(code))},
            signature=pyfunc.text_classifier_signature(labels, inputs, tokens=labels_tokens(cfg)),
            input_example=inputs_frame(example),
            pip_requirements=_pinned_requirements(SERVING_PACKAGES + family_of(cfg).serving_packages),
            metadata={"labels": labels, "depth": cfg.depth, "family": family_of(cfg).kind},
        )
    return info.model_uri


HF_ARTIFACT, ONNX_ARTIFACT, DEPLOYMENT_FILE = "hf", "onnx", "deployment.json"
# The code a logged model imports, under the names it imports it by where depthfinder is not installed.
SERVING_CODE = {"depthfinder_serving.py": serving, "depthfinder_network.py": network}


def _deployment_artifacts(deployment: Deployment | None, folder: Path) -> dict[str, str]:
    """The artifacts `hf` (the Hugging Face folder) and `onnx` (the shipped variants and deployment.json)."""
    if deployment is None:
        return {}
    onnx = folder / ONNX_ARTIFACT
    onnx.mkdir()
    for file in deployment.shipped_files():
        shutil.copyfile(file, onnx / Path(file).name)
    if deployment.shipped_files() and deployment.tokenizer_file:  # what a device runs them with, tokenizers alone
        shutil.copyfile(deployment.tokenizer_file, onnx / Path(deployment.tokenizer_file).name)
    (onnx / DEPLOYMENT_FILE).write_text(json.dumps(deployment.to_dict(), indent=2) + "\n", encoding="utf-8")
    return {ONNX_ARTIFACT: str(onnx)} | ({HF_ARTIFACT: deployment.hf_folder} if deployment.hf_folder else {})


def _registered_bundle(candidate: Candidate, deployment: Deployment | None) -> str:
    """The bundle the version serves: the pruned model's when the deployment gate shipped it, else the candidate's."""
    return deployment.bundle if deployment is not None and deployment.bundle else candidate.bundle


def _bundle_mb(candidate: Candidate, deployment: Deployment | None) -> float | None:
    """The size of the bundle the version serves, MiB."""
    if deployment is None or not deployment.bundle:
        return candidate.cost.bundle_mb
    return sum(path.stat().st_size for path in Path(deployment.bundle).iterdir()) / 2**20


def _serving_code(folder: Path) -> list[str]:
    """Copies of the modules the model's code file imports (encoder.serving and the scratch network), named as
    it imports them where depthfinder is not installed: MLflow puts code_paths on the served model's path."""
    paths = []
    for name, module in SERVING_CODE.items():
        shutil.copyfile(module.__file__, folder / name)
        paths.append(str(folder / name))
    return paths


def _pinned_requirements(packages: tuple[str, ...]) -> list[str]:
    """`package==version` for each serving package installed here (local tags like +cpu dropped)."""
    pins = []
    for package in packages:
        try:
            pins.append(f"{package}=={version(package).split('+')[0]}")
        except PackageNotFoundError:
            pins.append(package)
    return pins


def register_version(
    client: MlflowClient, model_uri: str, model_name: str, tags: dict[str, str]
) -> ModelVersion:
    """Register a logged model as a new version of `model_name` and tag it; it gets no alias yet.

    The `challenger` alias (mark_challenger) comes once the version has been judged against the
    champion, so a challenger always means "judged", whatever stopped a run before that. Until
    `record_judgement`, the version's tag `judged` says `pending`: a version a run registered and
    never judged (it was killed) is found by that and settled by the next run (settle_unjudged).

    Args:
        client: Client of the tracking server that holds the registry.
        model_uri: The URI log_text_classifier returned.
        model_name: Registered model name (created on first use).
        tags: Version tags, e.g. data hash, depth, audit status, code version.

    Returns:
        The new model version, read back with its tags.
    """
    try:
        client.create_registered_model(model_name)
    except MlflowException as exc:
        if exc.error_code != ErrorCode.Name(RESOURCE_ALREADY_EXISTS):
            raise
    model_id = _logged_model_id(model_uri)
    source, run_id = model_uri, None
    if model_id is not None:
        logged = client.get_logged_model(model_id)
        run_id = logged.source_run_id
        if client.tracking_uri != mlflow.get_tracking_uri():
            # The SQL registry resolves a models:/ source through the *global* tracking URI;
            # when this client points at another store, hand it the artifact location instead.
            source = logged.artifact_location
    created = client.create_model_version(
        name=model_name,
        source=source,
        run_id=run_id,
        tags={key: str(value) for key, value in tags.items()} | {JUDGED: PENDING},
        model_id=model_id,
    )
    return client.get_model_version(model_name, created.version)


def record_judgement(client: MlflowClient, model_name: str, version: str, promoted: bool) -> None:
    """The version's judgement is complete: its aliases are where it put them."""
    client.set_model_version_tag(model_name, str(version), JUDGED, PROMOTED if promoted else NOT_PROMOTED)


def settle_unjudged(client: MlflowClient, model_name: str) -> list[str]:
    """Finish or delete the versions a stopped or killed run registered and never judged (tag `judged`
    pending); call under the model's retrain lock, so that no live run is judging one. A version that holds
    `champion` got as far as its promotion: it is aliased challenger and recorded; one that holds
    `challenger` is recorded; one that holds no alias is deleted. One phrase per version settled."""
    registered = registered_model(client, model_name)
    if registered is None:
        return []
    held: dict[str, set[str]] = {}
    for alias, number in registered.aliases.items():
        held.setdefault(str(number), set()).add(alias)
    settled = []
    for found in client.search_model_versions(f"name = '{model_name}'"):
        number, aliases = str(found.version), held.get(str(found.version), set())
        if found.tags.get(JUDGED) != PENDING:
            continue
        if not aliases:
            client.delete_model_version(model_name, number)
            settled.append(f"version {number} deleted: registered by a run that ended before judging it")
            continue
        if CHALLENGER not in aliases:
            mark_challenger(client, model_name, found, "promoted by a run that ended before recording it")
        record_judgement(client, model_name, number, CHAMPION in aliases)
        settled.append(f"version {number} ({', '.join(sorted(aliases))}): the judgement a run began is recorded")
    return settled


def mark_challenger(client: MlflowClient, model_name: str, version: ModelVersion, verdict: str) -> None:
    """Alias `version` `challenger`: the latest version judged against the champion (`verdict`: how it fared)."""
    move_alias(client, model_name, CHALLENGER, version.version, f"judged against the champion: {verdict}",
               version.run_id)


def _logged_model_id(model_uri: str) -> str | None:
    """The id in `models:/<model_id>`, or None for other URIs (runs:/, models:/name/version)."""
    prefix = "models:/"
    rest = model_uri[len(prefix) :] if model_uri.startswith(prefix) else ""
    return rest if rest and "/" not in rest and "@" not in rest else None


def current_champion(client: MlflowClient, model_name: str) -> ModelVersion | None:
    """The version aliased `champion`, or None when there is none (or no such registered model)."""
    # A missing alias is INVALID_PARAMETER_VALUE on the SQL store, so read the alias map
    # instead of telling that apart from a genuinely bad request.
    registered = registered_model(client, model_name)
    version = None if registered is None else registered.aliases.get(CHAMPION)
    return None if version is None else client.get_model_version(model_name, str(version))


def registered_model(client: MlflowClient, model_name: str) -> RegisteredModel | None:
    """The registered model `model_name`, or None when nothing is registered under that name yet."""
    try:
        return client.get_registered_model(model_name)
    except MlflowException as exc:
        if exc.error_code == ErrorCode.Name(RESOURCE_DOES_NOT_EXIST):
            return None
        raise


def predict_labels(model_uri: str, texts: Sequence[ModelInput]) -> list[str]:
    """The label a logged or registered depthfinder model gives each text (a foreign model: ValueError)."""
    return open_classifier(model_uri).predict(list(texts))


def promote_if_better(
    client: MlflowClient,
    model_name: str,
    challenger: ModelVersion,
    truths: Sequence[str],
    challenger_labels: Sequence[str],
    champion_labels: Sequence[str] | None,
    rule: SelectionRule,
    standing: Sequence[str] | None = None,
) -> Judgement:
    """Move `champion` to the challenger when should_promote says so; the old one becomes `previous-champion`.
    The move records the judgement's sentence, interval included.

    Moving the alias is the last step, so a failure before it leaves `champion` where it was.

    Args:
        client: Client of the registry.
        model_name: Registered model name.
        challenger: The version register_version returned.
        truths: The test split's labels.
        challenger_labels: The challenger's labels for the same rows.
        champion_labels: The champion's, or None when there is no champion.
        rule: The selection rule: its metric, confidence and promotion_margin decide.
        standing: Each test row's standing against the champion (expectations.changes.compare.standing): only
            the rows both could fairly be asked about are judged on; None judges on every row.

    Returns:
        The judgement: whether the challenger was promoted, why, and the interval it was decided by.
    """
    judgement = should_promote(truths, challenger_labels, champion_labels, rule, standing)
    if not judgement.promoted:
        return judgement
    champion = current_champion(client, model_name)
    if champion is not None and str(champion.version) != str(challenger.version):
        move_alias(client, model_name, PREVIOUS_CHAMPION, champion.version,
                   f"replaced by version {challenger.version}", challenger.run_id)
    move_alias(client, model_name, CHAMPION, challenger.version, judgement.reason, challenger.run_id)
    return judgement


def register_challenger(
    sweep: SweepRun, candidate: Candidate, table: str, texts: list[ModelInput], labels: list[str], model_name: str,
    rule: SelectionRule, tags: dict[str, str], deployment: Deployment | None = None,
    standing: list[str] | None = None,
) -> Registration:
    """Register `candidate` under the sweep's parent run (which keeps `table`, the table it was trained on); score
    it and the champion on the same test rows (`texts`, `labels`); promote it if it earns it by `rule`, judged on
    the rows whose `standing` against the champion makes the comparison fair (all without one); alias it
    challenger.

    A signal waits for each registry step to finish (STOP.deferred). A run stopped while the versions are
    scored removes the version it registered (never judged); the judgement itself (champion, challenger,
    the `judged` tag) is one step. A run killed outright leaves its version `judged: pending`, which the
    next run settles (settle_unjudged) before it registers anything.
    """
    use_store(sweep.tracking_uri)
    client = sweep.client
    settle_unjudged(client, model_name)  # what an earlier attempt left (a task's retries)
    with mlflow.start_run(run_id=sweep.run_id):
        mlflow.log_artifact(table, TABLE_ARTIFACTS)  # what the next night compares its table with
        bundle = _registered_bundle(candidate, deployment)
        model_uri = log_text_classifier(bundle, input_example=texts[:3], deployment=deployment)
    champion = current_champion(client, model_name)
    cost_tag = {f"cost.{rule.cost}": candidate.cost.value(rule.cost)}
    challenger, challenger_labels, champion_labels = _register_and_score(
        client, model_uri, model_name, champion, texts, tags | cost_tag)
    with STOP.deferred():  # the judgement moves champion, then challenger, then says it is complete
        judgement = promote_if_better(client, model_name, challenger, labels, challenger_labels, champion_labels,
                                      rule, standing)
        mark_challenger(client, model_name, challenger, judgement.reason)
        record_judgement(client, model_name, challenger.version, judgement.promoted)
    return Registration(
        model=ModelVersionRef(name=model_name, version=str(challenger.version),
                              uri=f"models:/{model_name}/{challenger.version}", family=candidate.family,
                              depth=candidate.depth, size_mb=_bundle_mb(candidate, deployment),
                              inputs=list(bundle_inputs(bundle)),
                              outputs=output_columns(read_bundle_config(bundle)[0])),
        promoted=judgement.promoted,
        promotion=judgement.reason,
        champion_version=str(challenger.version if judgement.promoted else champion.version),
        challenger_test_metrics=judgement.challenger_metrics,
        champion_test_metrics=judgement.champion_metrics,
        comparison=judgement.comparison,
        promotion_margin=judgement.margin,
        promotion_rows=judgement.rows,
        rows_apart=judgement.apart,
    )


def _register_and_score(
    client: MlflowClient, model_uri: str, model_name: str, champion: ModelVersion | None, texts: list[ModelInput],
    tags: dict[str, str],
) -> tuple[ModelVersion, list[str], list[str] | None]:
    """The new version (registered, not yet judged) and both models' labels for `texts` (the champion's None
    without one); a failure or a stop before the labels are in removes the version again: never judged, nothing
    to keep."""
    from depthfinder.expectations.table.labels import normalize_label

    challenger = None
    try:
        with STOP.deferred():
            challenger = register_version(client, model_uri, model_name, tags)
        challenger_labels = predict_labels(f"models:/{model_name}/{challenger.version}", texts)
        champion_labels = None
        if champion is not None:
            # normalize_label: a champion trained before labels were normalised may name a class another way.
            champion_labels = [normalize_label(label)
                               for label in predict_labels(f"models:/{model_name}/{champion.version}", texts)]
    except BaseException:
        if challenger is not None:
            with STOP.deferred():
                client.delete_model_version(model_name, challenger.version)
        raise
    return challenger, challenger_labels, champion_labels


def find_unchanged_version(client: MlflowClient, model_name: str, fingerprint: dict[str, str]) -> KnownVersion | None:
    """The `champion` (else `challenger`) version whose tags hold every (key, value) of `fingerprint` (e.g.
    data_hash, config_hash, code_version), or None. A challenger that matches was already scored against the
    champion and lost."""
    registered = registered_model(client, model_name)
    if registered is None:
        return None
    for alias in (CHAMPION, CHALLENGER):
        if alias not in registered.aliases:
            continue
        version = client.get_model_version(model_name, str(registered.aliases[alias]))
        if all(version.tags.get(key) == value for key, value in fingerprint.items()):
            return KnownVersion(alias=alias, version=str(version.version), depth=version.tags.get("depth"))
    return None
