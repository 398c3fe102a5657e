"""Registry tasks: find a version trained on the same data, settings and code; register and promote a new one.

Thin wrappers: the registry's work is tracking.registry's, the deployment's encoder.deployment's.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import task
from prefect.cache_policies import NONE

from depthfinder.encoder.verdict import Deployment
from depthfinder.expectations.changes.report import ChangeReport
from depthfinder.expectations.table.shape import ModelInput, model_inputs, read_inputs
from depthfinder.runtime.retries import RETRIES
from depthfinder.selection.candidate import Candidate
from depthfinder.selection.settings import SelectionRule
from depthfinder.tasks.data import PreparedData
from depthfinder.tasks.pool import PoolTexts, pool_texts
from depthfinder.tracking.records import KnownVersion, Registration
from depthfinder.tracking.runs import SweepRun, client_of


@task(cache_policy=NONE)
def prepare_deployment(candidate: Candidate, dataset: PreparedData, rule: SelectionRule, folder: str,
                       pool: PoolTexts | None = None) -> Deployment:
    """The chosen model's other forms in `folder`: its vocabulary pruned to the task's texts (the train and validation
    splits and the unlabelled `pool`: encoder.vocabulary.vocabulary_texts), its ONNX variants and
    its Hugging Face folder where it is one, each measured on the test split (their latencies checked against the
    candidate's cost table figure) and shipped only within the rule's deployment margin (encoder.deployment); the
    ONNX variants and the folder are made from the pruned model when it ships."""
    from depthfinder.encoder.bundle import save_hf_folder
    from depthfinder.encoder.deployment import Gate, Shrinking, measure_deployment
    from depthfinder.encoder.serving import load_bundle
    from depthfinder.encoder.verdict import within_size
    from depthfinder.encoder.vocabulary import vocabulary_texts

    model = load_bundle(Path(candidate.bundle))
    texts, labels = _test_split(dataset)
    frame = read_inputs(dataset.path, "split")
    deployment = measure_deployment(
        model, texts, labels, Gate(rule.metric, rule.deployment_margin, rule.confidence), Path(folder) / "onnx",
        Shrinking(vocabulary_texts(frame, pool_texts(pool)), rule.vocabulary_min_count, rule.max_size_mb),
        expected_ms=candidate.cost.latency_ms_p50 if candidate.cost else None)
    deployment = within_size(deployment, rule.max_size_mb)
    if deployment.bundle is not None:  # the pruned model ships: every form carries its vocabulary
        model = load_bundle(Path(deployment.bundle))
    hf = save_hf_folder(Path(folder) / "hf", model.network, model.tokenizer, model.labels)
    return deployment.model_copy(update={"hf_folder": None if hf is None else str(hf)})


@task(**RETRIES)
def register_model(
    candidate: Candidate, dataset: PreparedData, parent_run: SweepRun, model_name: str, rule: SelectionRule,
    tags: dict[str, str], deployment: Deployment | None = None, changes: ChangeReport | None = None,
) -> Registration:
    """Register `candidate`, judged against the champion on the test rows where the comparison is fair (what
    `changes` says of them) by `rule`, and alias it challenger (tracking.registry.register_challenger)."""
    from depthfinder.tracking.registry import register_challenger

    texts, labels = _test_split(dataset)
    return register_challenger(parent_run, candidate, dataset.path, texts, labels, model_name, rule, tags, deployment,
                               _test_standing(dataset, changes))


@task(**RETRIES)
def settle_registrations(tracking_uri: str, model_name: str) -> list[str]:
    """Finish or delete the versions that runs which ended early registered and never judged; what was done."""
    from depthfinder.tracking.registry import settle_unjudged

    return settle_unjudged(client_of(tracking_uri), model_name)


@task(**RETRIES)
def find_unchanged_model(tracking_uri: str, model_name: str, fingerprint: dict[str, str]) -> KnownVersion | None:
    """The `champion` (else `challenger`) version trained on this very data, config and code, or None
    (tracking.registry.find_unchanged_version)."""
    from depthfinder.tracking.registry import find_unchanged_version

    return find_unchanged_version(client_of(tracking_uri), model_name, fingerprint)


def _test_split(dataset: PreparedData) -> tuple[list[ModelInput], list[str]]:
    """The prepared table's test inputs (texts, or pairs) and labels."""
    test = _test_rows(dataset)
    return model_inputs(test), test["label"].tolist()


def _test_rows(dataset: PreparedData) -> pd.DataFrame:
    frame = pd.read_parquet(dataset.path)
    return frame[frame["split"] == "test"]


def _test_standing(dataset: PreparedData, changes: ChangeReport | None) -> list[str] | None:
    """Each test row's standing against the champion's table (expectations.changes.compare.standing), or None when
    no table of the champion's was compared with tonight's."""
    from depthfinder.expectations.changes.compare import standing

    if changes is None or changes.champion_table is None:
        return None
    champion = pd.read_parquet(changes.champion_table)
    return standing(champion, _test_rows(dataset), changes.foreign_row_numbers).tolist()
