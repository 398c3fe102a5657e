"""Registry tasks: find a version trained on the same data, settings and code; register and promote a new one."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import task
from prefect.cache_policies import NONE

from encoder.deployment import Deployment
from encoder.selection.candidate import Candidate
from encoder.selection.rule import SelectionRule
from encoder.tracking.records import KnownVersion, ModelVersionRef, Registration
from encoder.tracking.runs import SweepRun, client_of, use_store
from runtime.interrupt import STOP
from runtime.retries import RETRIES
from tasks.changes import TABLE_ARTIFACTS
from tasks.data import TRAINING_COLUMNS, PreparedData


@task(cache_policy=NONE)
def prepare_deployment(candidate: Candidate, dataset: PreparedData, rule: SelectionRule, folder: str) -> Deployment:
    """The chosen model's other forms in `folder`: its Hugging Face folder where it is one, and its ONNX variants,
    each measured on the test split and shipped only within the rule's tolerance (encoder.deployment)."""
    from encoder.bundle import save_hf_folder
    from encoder.deployment import measure_deployment
    from encoder.serving import load_bundle

    model = load_bundle(Path(candidate.bundle))
    frame = pd.read_parquet(dataset.path, columns=TRAINING_COLUMNS)
    test = frame[frame["split"] == "test"]
    deployment = measure_deployment(model.network, model.tokenizer, model.labels, test["text"].tolist(),
                                    test["label"].tolist(), rule.metric, rule.tolerance, Path(folder) / "onnx",
                                    rule.confidence)
    hf = save_hf_folder(Path(folder) / "hf", model.network, model.tokenizer, model.labels)
    return deployment.model_copy(update={"hf_folder": None if hf is None else str(hf)})


@task(**RETRIES)
def register_model(
    candidate: Candidate, dataset: PreparedData, sweep: SweepRun, model_name: str, rule: SelectionRule,
    tags: dict[str, str], deployment: Deployment | None = None,
) -> Registration:
    """Register `candidate` (its run keeps the table it was trained on); score it and the champion on the same
    test split; promote it if it earns it by `rule`; alias it challenger.

    A signal waits for each registry step to finish (STOP.deferred). A run stopped while the versions are
    scored removes the version it registered (never judged); the judgement itself (champion, challenger,
    the `judged` tag) is one step. A run killed outright leaves its version `judged: pending`, which the
    next run settles (settle_unjudged) before it registers anything.
    """
    import mlflow

    from encoder.metrics import classification_metrics
    from encoder.tracking.registry import (
        current_champion,
        log_text_classifier,
        mark_challenger,
        predict_labels,
        promote_if_better,
        record_judgement,
        register_version,
        settle_unjudged,
    )
    from expectations.table.labels import normalize_label

    frame = pd.read_parquet(dataset.path, columns=TRAINING_COLUMNS)
    test = frame[frame["split"] == "test"]
    texts, labels = test["text"].tolist(), test["label"].tolist()
    use_store(sweep.tracking_uri)
    client = sweep.client
    settle_unjudged(client, model_name)  # what an earlier attempt of this task left (retries)
    with mlflow.start_run(run_id=sweep.run_id):
        mlflow.log_artifact(dataset.path, TABLE_ARTIFACTS)  # what the next night compares its table with
        model_uri = log_text_classifier(candidate.bundle, input_example=texts[:3], deployment=deployment)
    champion = current_champion(client, model_name)
    cost_tag, cost = f"cost.{rule.cost}", candidate.cost.value(rule.cost)
    challenger = None
    try:
        with STOP.deferred():
            challenger = register_version(client, model_uri, model_name, tags | {cost_tag: cost})
        version_uri = f"models:/{model_name}/{challenger.version}"
        challenger_labels = predict_labels(version_uri, texts)
        champion_labels = None
        if champion is not None:
            # normalize_label: a champion trained before labels were normalised may name a class another way.
            champion_labels = [normalize_label(label)
                               for label in predict_labels(f"models:/{model_name}/{champion.version}", texts)]
    except BaseException:
        if challenger is not None:
            with STOP.deferred():
                client.delete_model_version(model_name, challenger.version)  # never judged: nothing to keep
        raise
    with STOP.deferred():  # the judgement moves champion, then challenger, then says it is complete
        judgement = promote_if_better(client, model_name, challenger, labels, challenger_labels, champion_labels,
                                      rule)
        mark_challenger(client, model_name, challenger, judgement.reason)
        record_judgement(client, model_name, challenger.version, judgement.promoted)
    promoted, why = judgement.promoted, judgement.reason
    challenger_metrics = classification_metrics(labels, challenger_labels)
    champion_metrics = None if champion_labels is None else classification_metrics(labels, champion_labels)
    return Registration(
        model=ModelVersionRef(name=model_name, version=str(challenger.version), uri=version_uri,
                              family=candidate.family, depth=candidate.depth, size_mb=candidate.cost.bundle_mb),
        promoted=promoted,
        promotion=why,
        champion_version=str(challenger.version if promoted else champion.version),
        challenger_test_metrics=challenger_metrics,
        champion_test_metrics=champion_metrics,
        comparison=judgement.comparison,
    )


@task(**RETRIES)
def settle_registrations(tracking_uri: str, model_name: str) -> list[str]:
    """Finish or delete the versions that runs which ended early registered and never judged; what was done."""
    from encoder.tracking.registry import settle_unjudged

    return settle_unjudged(client_of(tracking_uri), model_name)


@task(**RETRIES)
def find_unchanged_model(tracking_uri: str, model_name: str, fingerprint: dict[str, str]) -> KnownVersion | None:
    """The `champion` (else `challenger`) version trained on this very data, config and code, or None.

    `fingerprint` holds the version tags that must match, e.g. data_hash, config_hash,
    code_version. A challenger that matches was already scored against the champion and lost.
    """
    from encoder.tracking.registry import CHALLENGER, CHAMPION, registered_model

    client = client_of(tracking_uri)
    registered = registered_model(client, model_name)
    if registered is None:
        return None
    aliases = registered.aliases
    for alias in (CHAMPION, CHALLENGER):
        if alias not in aliases:
            continue
        version = client.get_model_version(model_name, str(aliases[alias]))
        if all(version.tags.get(key) == value for key, value in fingerprint.items()):
            return KnownVersion(alias=alias, version=str(version.version), depth=version.tags.get("depth"))
    return None
