"""Tasks of the depth sweep: fit the tokenizer once, train and measure one (depth, seed).

A candidate lives in its own folder under `workdir/candidates`, named by what decides it:
data hash, model and training settings, class weights, depth, seed and code version. Its
result at an epoch budget is written there (`result-epochs-N.json`, atomically) before its
MLflow run is marked FINISHED, so a sweep killed at any moment reuses every result it
finished. A candidate killed while it trained continues from the full training state saved
after its last finished epoch; a successive-halving rung continues from the previous rung's
state. Both end exactly where training straight through would, so a result at a budget is
the same however it was reached.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import MLFlowLogger
from prefect import get_run_logger, task
from prefect.cache_policies import NONE
from prefect.states import Cancelled, State

from depthfinder.encoder.config import ModelConfig, TrainConfig
from depthfinder.encoder.families import Family
from depthfinder.expectations.table.shape import model_inputs, read_inputs, side_texts
from depthfinder.runtime.credentials import store_uri
from depthfinder.runtime.files import write_text_whole
from depthfinder.runtime.interrupt import Interrupted
from depthfinder.runtime.retries import RETRIES
from depthfinder.selection.candidate import DISTILLED, Candidate, Cost, arm_label, student_family
from depthfinder.tasks.data import LABELLED_COLUMNS, PreparedData
from depthfinder.tasks.pool import PoolTexts, pool_examples
from depthfinder.tracking.runs import (
    EPOCH_CURVES,
    SweepRun,
    code_version,
    end_status,
    ending,
    log_candidate,
    log_params,
    set_tags,
    start_child_run,
)


class EpochLog(Callback):
    """One line per epoch in the task's Prefect log (the UI shows it; progress bars stay in the terminal)."""

    def __init__(self, name: str, max_epochs: int) -> None:
        self.name, self.max_epochs = name, max_epochs

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:  # after this epoch's validation
        figures = {key: float(value) for key, value in trainer.callback_metrics.items()}
        keys = [key for key in ("train/loss", "val/loss", "val/macro_f1") if key in figures]
        shown = ", ".join(f"{key} {figures[key]:.3f}" for key in keys)
        get_run_logger().info("%s epoch %d/%d: %s", self.name, trainer.current_epoch + 1, self.max_epochs, shown)


class ChildRunLogger(MLFlowLogger):
    """Lightning's MLflow logger, except that it leaves the run's end to train_depth (Lightning marks the run
    FINISHED when `fit` returns, before the candidate is measured and its result made durable), and that each
    epoch's figures are curves under EPOCH_CURVES (`by_epoch/val/macro_f1`): the run's own `val/macro_f1` is
    the best epoch's, the one the decision uses (tracking.runs.log_candidate), not the last epoch's. Its
    `epoch` counts epochs done (Lightning's is 0-based), so the last equals the `depthfinder.epochs` tag."""

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        curves = {(key if key == "epoch" else EPOCH_CURVES + key): value + 1 if key == "epoch" else value
                  for key, value in metrics.items()}
        super().log_metrics(curves, step)

    def finalize(self, status: str = "success") -> None:
        pass


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


@task(cache_policy=NONE)
def prepare_tokenizer(family: Family, dataset: PreparedData, model: ModelConfig, workdir: Path) -> str:
    """The tokenizer a family's candidates use (scratch: fitted to the train split once; pretrained: the
    checkpoint's own), as the path of its tokenizer.json."""
    return family.tokenizer(Path(dataset.path), dataset.data_hash, model, Path(workdir))


@task(**RETRIES)
def open_families(kinds: list[str], model: ModelConfig) -> list[Family]:
    """The families of `kinds` as the model settings describe them, one per checkpoint (a hub checkpoint is
    fetched: network I/O, retried)."""
    from depthfinder.encoder.families import open_families as opened

    return opened(kinds, model)


@dataclass(frozen=True)
class Training:
    """What every candidate of a family trains with: data, tokenizer, recipe, checkpoint, and where it goes."""

    family: Family
    dataset: PreparedData
    tokenizer_path: str
    model: ModelConfig
    train: TrainConfig  # the family's recipe (Family.recipe)
    class_weights: bool
    parent_run: SweepRun  # the MLflow run every candidate's child run goes under
    workdir: Path
    onnx_cost: bool = False  # measure each candidate's int8 ONNX latency (the rule's cost is onnx_latency_ms_p50)
    onnx_size: bool = False  # weigh each candidate's int8 ONNX forms (the rule asks for size: encoder.size)
    vocabulary_min_count: int = 1  # the pruned forms keep tokens used this often in the train split
    probes: bool = False  # the search strategy's screen: a probe on each layer (encoder.probes)
    concurrent: int = 1  # candidates training at once on one machine: each takes its share of the cores
    fold: Fold | None = None  # a fold of cross-fitting (its dataset holds that fold's rows as its test split)
    form_check: FormCheck | None = None  # under a size limit: its forms checked on the validation rows (Cost.passed_mb)
    teacher: Teacher | None = None  # its candidates are students of this teacher (encoder.distillation)

    @property
    def name(self) -> str:
        """What its candidates' family reads (Candidate.family): the family's name, or for students
        `scratch, distilled from depth 6`, an arm of their own beside their plain twins."""
        return self.family.name if self.teacher is None else student_family(self.family.name, self.teacher.label)

    def label(self, depth: int, seed: int | None = None) -> str:
        """`depth 2`, `MiniLM depth 2`, `depth 2, distilled from depth 6` or `depth 2 fold 3/5`: how its candidates'
        runs and logs name them; with `seed`, `depth 2 seed 1, distilled from depth 6` (the seed is the student's)."""
        named = arm_label(self.family.name, depth) + ("" if seed is None else f" seed {seed}")
        named = named if self.teacher is None else f"{named}{DISTILLED}{self.teacher.label}"
        return named if self.fold is None else f"{named} fold {self.fold.index}/{self.fold.folds}"


@dataclass(frozen=True)
class Teacher:
    """The candidate that teaches students: its bundle, its content's digest (what keys its soft labels and its
    students), how the run names it (`depth 6`, the arm; `seed` the seed whose model teaches), the recipe, and the
    unlabelled texts the students also learn its soft labels on (tasks.pool.teaching_texts; None: the train rows
    alone)."""

    bundle: str
    digest: str
    label: str
    seed: int
    temperature: float
    alpha: float
    unlabeled: PoolTexts | None = None
    # (family, depth, seed, bundle): the trained plain twin each student starts from (sweep.distill.start twin);
    # none: its initialisation, as the twin started.
    twins: tuple[tuple[str, int, int, str], ...] = ()

    def twin_of(self, family: str, depth: int, seed: int) -> str | None:
        """The bundle of the plain twin the student (family, depth, seed) starts from, or None: of its own family,
        where several have a candidate of that depth."""
        return next((bundle for f, d, s, bundle in self.twins if (f, d, s) == (family, depth, seed)), None)


@dataclass(frozen=True)
class FormCheck:
    """The check a candidate's forms pass on its validation rows under a size limit (encoder.deployment.forms_passed):
    the rule's metric, the deployment margin its mean may lose, and the limit (the coded form is coded as finely as
    it allows)."""

    metric: str
    margin: float
    limit_mb: float


@dataclass(frozen=True)
class Fold:
    """Which fold of cross-fitting a training is: the `index`-th of `folds` (from 1)."""

    index: int
    folds: int


def candidate_key(training: Training, depth: int, seed: int) -> str:
    """What decides a trained candidate, as a short hash: the checkpoint by its content, not its path or the name
    it has in the run (which depends on the other checkpoints beside it)."""
    return _digest({
        "data": training.dataset.data_hash,
        "family": training.family.kind,
        "checkpoint": training.family.identity(),
        "model": training.model.model_dump(mode="json", exclude={"pretrained"}),
        "train": training.train.model_dump(mode="json", exclude={"seed"}),
        "class_weights": training.class_weights, "depth": depth, "seed": seed, "code": code_version(),
        **({"onnx_cost": True} if training.onnx_cost else {}), **({"probes": True} if training.probes else {}),
        **({"onnx_size": True} if training.onnx_size else {}),
        **({"vocabulary_min_count": n} if (n := training.vocabulary_min_count) != 1 else {}),
        **({"form_check": [(check := training.form_check).metric, check.margin, check.limit_mb]}
           if training.form_check else {}),
        # A student: by its teacher's content (not its path or label) and the recipe that weighed its soft labels.
        **({"teacher": training.teacher.digest, "temperature": training.teacher.temperature,
            "alpha": training.teacher.alpha} if training.teacher else {}),
        **({"unlabeled": training.teacher.unlabeled.digest} if training.teacher and training.teacher.unlabeled
           else {}),
        # Started from its trained twin, whose own key the rest of this one decides.
        **({"start": "twin"} if training.teacher and training.teacher.twin_of(training.family.name, depth, seed)
           else {}),
    })


def result_path(candidate_dir: Path, epochs: int) -> Path:
    """Where a candidate's result at an epoch budget is kept."""
    return candidate_dir / f"result-epochs-{epochs}.json"


def read_result(candidate_dir: Path, epochs: int) -> Candidate | None:
    """The candidate's finished result at `epochs`, or None when there is none (or its bundle is gone)."""
    try:
        result = Candidate.from_dict(json.loads(result_path(candidate_dir, epochs).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None
    return result if result.bundle and Path(result.bundle).is_dir() else None


def _write_result(candidate_dir: Path, epochs: int, result: Candidate) -> None:
    write_text_whole(result_path(candidate_dir, epochs), json.dumps(result.to_dict(), indent=2) + "\n")


@task(task_run_name="train-{training.name}-depth-{depth}-seed-{seed}", cache_policy=NONE)
def train_depth(
    training: Training, depth: int, seed: int, epochs: int | None = None, previous: Candidate | None = None
) -> Candidate | State:
    """Train one (depth, seed) of a family to `epochs` (None: to the end) in its MLflow child run, continuing
    from its last saved epoch; `previous` is this candidate's result at an earlier rung, whose child run it
    continues. Return metrics, cost and paths; status `cached` when the result was already there. Stopped
    by a signal, the task ends Cancelled and its result raises Interrupted."""
    training = replace(training, train=training.train.model_copy(update={"seed": seed}))
    epochs = epochs or training.train.max_epochs
    key = candidate_key(training, depth, seed)
    # By kind and key, not name: a checkpoint named otherwise beside other checkpoints is the same candidate.
    fold = f"-fold-{training.fold.index}-of-{training.fold.folds}" if training.fold else ""
    student = "-student" if training.teacher else ""
    folder = f"{training.family.kind}-depth-{depth}-seed-{seed}{fold}{student}-{key}"
    candidate_dir = Path(training.workdir).resolve() / "candidates" / folder  # absolute: results name their files
    if (found := read_result(candidate_dir, epochs)) is not None:  # named as this run names its family
        return found.model_copy(update={"status": "cached", "family": training.name})
    parent = training.parent_run
    label = training.label(depth)
    if previous is not None:
        run_id = previous.mlflow_run_id
    else:
        tags = {"depthfinder.depth": str(depth), "depthfinder.seed": str(seed),
                "depthfinder.family": training.name,
                **({"depthfinder.fold": f"{training.fold.index}/{training.fold.folds}"} if training.fold else {}),
                **({"depthfinder.teacher": f"{training.teacher.label} seed {training.teacher.seed}"}
                   if training.teacher else {})}
        run_id = start_child_run(parent, parent.child_name(label, seed), tags)
        log_params(parent.client, run_id, {"depth": depth, "seed": seed, "family": training.name,
                                           "class_weights": training.class_weights, **_teacher_params(training)})
    try:
        with ending(parent.client, run_id):
            try:
                result = _train_and_measure(training, depth, run_id, candidate_dir, epochs)
                if previous is not None:  # continued by design (a rung, an extension), not after a failure
                    result = result.model_copy(update={"resumed_from": previous.resumed_from})
            except BaseException as exc:
                set_tags(parent.client, run_id, {"depthfinder.status": end_status(exc).lower()})  # failed or killed
                raise
            _write_result(candidate_dir, epochs, result)  # durable before the run says FINISHED
            log_candidate(parent, run_id, result)
    except Interrupted as stopped:  # an operator's stop, not a failure: no traceback in the log
        return Cancelled(message=str(stopped), data=stopped)
    return result


def _teacher_params(training: Training) -> dict[str, Any]:
    """A student's run's params: who taught it and by what recipe."""
    teacher = training.teacher
    return {} if teacher is None else {"teacher": f"{teacher.label} seed {teacher.seed}", "teacher_digest":
                                       teacher.digest, "distill_temperature": teacher.temperature,
                                       "distill_alpha": teacher.alpha,
                                       "distill_unlabeled_texts": teacher.unlabeled.rows if teacher.unlabeled else 0}


def _soft_labels(training: Training, frame: pd.DataFrame) -> Any:
    """A student's soft labels on its table's train rows (encoder.distillation; cached per teacher and table), or
    None for a plain candidate."""
    from depthfinder.encoder.distillation import SoftLabels, teacher_logits, train_texts

    teacher = training.teacher
    if teacher is None:
        return None
    cache = Path(training.workdir).resolve()
    logits = teacher_logits(Path(teacher.bundle), teacher.digest, train_texts(frame), training.dataset.data_hash,
                            cache)
    if teacher.unlabeled is None:
        return SoftLabels(logits=logits, temperature=teacher.temperature, alpha=teacher.alpha)
    texts = tuple(pool_examples(teacher.unlabeled))
    return SoftLabels(logits=logits, temperature=teacher.temperature, alpha=teacher.alpha, unlabeled_texts=texts,
                      unlabeled_logits=teacher_logits(Path(teacher.bundle), teacher.digest, list(texts),
                                                      f"unlabeled-{teacher.unlabeled.digest}", cache))


def _train_and_measure(training: Training, depth: int, run_id: str, candidate_dir: Path, epochs: int) -> Candidate:
    """Train from the candidate's last saved epoch (if it has one within `epochs`), measure, save the bundle."""
    from depthfinder.encoder.bundle import save_bundle
    from depthfinder.encoder.cost import measure_cost
    from depthfinder.encoder.serving import load_tokenizer
    from depthfinder.encoder.size import form_sizes, smallest
    from depthfinder.encoder.trainer import checkpoint_epochs, last_checkpoint
    from depthfinder.encoder.training import TrainingData, TrainingSetup, train_candidate
    from depthfinder.encoder.vocabulary import vocabulary_texts
    from depthfinder.evidence.bootstrap import save_predictions

    train, dataset = training.train, training.dataset
    twin = None if training.teacher is None else training.teacher.twin_of(training.family.name, depth, train.seed)
    if twin is not None:  # a student from its trained twin: a restarted schedule at half the peak, as an extension
        from depthfinder.encoder.module import RESTART_PEAK

        train = train.model_copy(update={"learning_rate": train.learning_rate * RESTART_PEAK})
    name = training.label(depth, train.seed)
    tokenizer = load_tokenizer(training.tokenizer_path)
    frame = read_inputs(dataset.path, *LABELLED_COLUMNS)
    out_dir = candidate_dir / "checkpoints"
    last = last_checkpoint(out_dir, depth)
    done = checkpoint_epochs(last)
    resume = last if done is not None and done <= epochs else None
    if resume is not None:
        get_run_logger().info("%s continues from epoch %d", name, done)
    trained = train_candidate(
        TrainingData(frame, dataset.labels, tokenizer, training.class_weights, _soft_labels(training, frame)),
        depth,
        training.model,
        train,
        TrainingSetup(
            out_dir, epochs=epochs, resume_from=resume,
            logger=ChildRunLogger(tracking_uri=store_uri(training.parent_run.tracking_uri), run_id=run_id),
            callbacks=[EpochLog(name, max(epochs, train.max_epochs))],  # an extension runs past max_epochs
            concurrent=training.concurrent),
        family=training.family,
        probes=training.probes,
        start_from=None if twin is None else Path(twin),
    )
    bundle = save_bundle(candidate_dir / f"bundle-epochs-{epochs}", trained.network, tokenizer, dataset.labels,
                         dataset.inputs)
    predictions = save_predictions(candidate_dir / f"predictions-epochs-{epochs}.npz", trained.val_true,
                                   trained.val_predicted)
    test_predictions = save_predictions(candidate_dir / f"test-predictions-epochs-{epochs}.npz", trained.test_true,
                                        trained.test_predicted)
    size = sum(path.stat().st_size for path in bundle.iterdir()) / 2**20
    # The train and validation texts' tokens: a pool's (kept by the deployed form too) would make every candidate's
    # key depend on the pool, and adding unlabelled texts retrain them all.
    sizes = form_sizes(trained.network, tokenizer, vocabulary_texts(frame), onnx=training.onnx_size,
                       min_count=training.vocabulary_min_count,
                       limit_mb=training.form_check.limit_mb if training.form_check else None)
    passed = _passed_sizes(training, trained.network, tokenizer, frame, sizes) if training.form_check else {}
    cost = Cost(**measure_cost(trained.network, trained.median_length, onnx=training.onnx_cost),
                train_seconds=trained.train_seconds, bundle_mb=size, sizes_mb=sizes, passed_mb=passed,
                size_mb=smallest(passed or sizes))
    return Candidate(
        depth=depth, family=training.name, seed=train.seed, status="trained", metrics=trained.metrics,
        test_metrics=trained.test_metrics, cost=cost, epochs=trained.epochs, finished=trained.finished,
        mlflow_run_id=run_id, bundle=str(bundle), checkpoint=str(trained.checkpoint), predictions=str(predictions),
        test_predictions=str(test_predictions), history=trained.history,
        resumed_from=done if resume is not None else None,
        screen=_screened(training, trained, candidate_dir, epochs, run_id),
        teacher=f"{training.teacher.label} seed {training.teacher.seed}" if training.teacher else None,
        taught_texts=training.teacher.unlabeled.rows if training.teacher and training.teacher.unlabeled else 0,
        kept_twin=trained.kept_start,
    )


def _passed_sizes(training: Training, network: Any, tokenizer: Any, frame: pd.DataFrame,
                  sizes: dict[str, float]) -> dict[str, float]:
    """The weighed forms (`sizes`) that pass the check on the candidate's validation rows, its vocabulary pruned to
    the train split alone (encoder.deployment.forms_passed)."""
    import copy

    from depthfinder.encoder.deployment import Gate, Shrinking, forms_passed
    from depthfinder.encoder.serving import TextClassifier

    check, val = training.form_check, frame[frame["split"] == "val"]
    train = side_texts(frame[frame["split"] == "train"])
    model = TextClassifier(copy.deepcopy(network), tokenizer, training.dataset.labels, training.dataset.inputs)
    passed = forms_passed(model, model_inputs(val), val["label"].tolist(),
                          Gate(check.metric, check.margin), Shrinking(train, training.vocabulary_min_count,
                                                                      check.limit_mb))
    return {name: sizes[name] for name in passed if name in sizes}


def _screened(training: Training, trained: Any, candidate_dir: Path, epochs: int, run_id: str) -> list[Candidate]:
    """The depths below a screen's, as its probes saw them: status screened, with their saved predictions."""
    from depthfinder.evidence.bootstrap import save_predictions

    screened = []
    for depth, (predicted, metrics, test_metrics) in enumerate(zip(
            trained.probe_val_predicted, trained.probe_metrics, trained.probe_test_metrics, strict=True), start=1):
        path = save_predictions(candidate_dir / f"screen-epochs-{epochs}-depth-{depth}.npz", trained.val_true,
                                predicted)
        screened.append(Candidate(depth=depth, family=training.family.name, seed=training.train.seed,
                                  status="screened", metrics=metrics, test_metrics=test_metrics, epochs=trained.epochs,
                                  mlflow_run_id=run_id, predictions=str(path)))
    return screened


@task(cache_policy=NONE)
def make_teacher(candidate: Candidate, label: str, temperature: float, alpha: float,
                 unlabeled: PoolTexts | None = None, twins: list[Candidate] = ()) -> Teacher:
    """The teacher of the students of a run: `candidate`'s bundle, hashed by content (encoder.distillation), the
    unlabelled texts it teaches on besides the train rows, and the plain `twins` its students start from."""
    from depthfinder.encoder.distillation import bundle_digest

    return Teacher(bundle=candidate.bundle, digest=bundle_digest(Path(candidate.bundle)), label=label,
                   seed=candidate.seed, temperature=temperature, alpha=alpha, unlabeled=unlabeled,
                   twins=tuple((twin.family, twin.depth, twin.seed, twin.bundle) for twin in twins if twin.bundle))
