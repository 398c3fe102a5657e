"""The records that cross layers: one trained depth (a candidate) and what it costs.

Frozen pydantic models: they validate when built, serialise with `to_dict` (JSON types) and
come back with `from_dict`, so a run summary written to JSON can be read and its decision
replayed. The field descriptions are the summary's documentation (docs/summary.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from depthfinder.encoder.config import FamilyName
from depthfinder.evidence.margin import within
from depthfinder.runtime.records import Record

Status = Literal["trained", "cached", "pruned", "failed", "screened"]
# Statuses of candidates the rule may choose among: they trained to the end of their budget.
USABLE_STATUSES: tuple[Status, ...] = ("trained", "cached")
CostName = Literal["flops_per_example", "latency_ms_p50", "onnx_latency_ms_p50", "params", "size_mb", "train_seconds"]
COST_NAMES: dict[str, str] = {
    "flops_per_example": "FLOPs per example",
    "latency_ms_p50": "p50 latency",
    "onnx_latency_ms_p50": "p50 latency of the int8 ONNX model",
    "params": "parameters",
    "size_mb": "size of the smallest form",
    "train_seconds": "train time",
}


class Cost(Record):
    """What one candidate costs, measured the same way for every depth (encoder.cost)."""

    params: float | None = Field(None, description="Parameters, embeddings included.")
    params_without_embeddings: float | None = Field(
        None, description="Parameters without token and position embeddings."
    )
    flops_per_example: float | None = Field(
        None, description="FLOPs of one batch-1 forward at the median train length (torch's flop counter)."
    )
    latency_ms_p50: float | None = Field(
        None, description="Median CPU latency of a batch-1 forward, ms: the network's forward alone on one input of "
        "the median train length, timed as the candidate finished training (the deployment's torch latency is per "
        "test text as served, measured after the sweep: another figure)."
    )
    latency_ms_p95: float | None = Field(None, description="95th percentile of the same, ms.")
    onnx_latency_ms_p50: float | None = Field(
        None, description="Median CPU latency of a batch-1 forward of the int8 ONNX model (ONNX Runtime), ms; measured "
        "when the rule's cost asks for it."
    )
    throughput_per_s: float | None = Field(None, description="Examples per second in batches of 64.")
    peak_memory_mb: float | None = Field(
        None, description="Parameters, buffers, inputs and the peak of live tensors in one forward of 64, MiB."
    )
    train_seconds: float | None = Field(None, description="Training time in all, resumed parts included, s.")
    bundle_mb: float | None = Field(
        None, description="Size of the saved model (weights of the layers it uses, tokenizer, config), MiB."
    )
    sizes_mb: dict[str, float] = Field(
        {}, description="The weights of each form it could ship in, MiB (encoder.size): torch, torch-pruned (the "
        "vocabulary pruned to the train and validation texts; WordPiece tokenizers), and, when the rule asks for size "
        "and ONNX Runtime is installed, onnx-int8, onnx-int8-pruned and onnx-int8-coded (the rows the texts never use "
        "coded, encoder.coded); before the deployment gate judges any of them."
    )
    passed_mb: dict[str, float] = Field(
        {}, description="Under a size limit (max_size_mb): the sizes_mb of the forms that passed the check on the "
        "candidate's validation rows (none whose metric there is more than the deployment margin below the full "
        "model's), its vocabulary pruned to the train split alone so that they hold words it "
        "never kept, as the test split does for the deployed form (encoder.deployment.forms_passed); none without a "
        "limit."
    )
    size_mb: float | None = Field(
        None, description="The smallest of passed_mb under a size limit, else of sizes_mb, MiB: what it could ship at "
        "(the cost `size_mb` and the limit `max_size_mb`); the deployment gate judges the forms again on the test "
        "split."
    )

    def value(self, name: str) -> float | None:
        """The cost called `name` (a CostName or another field), None when not measured."""
        return getattr(self, name, None)


class Candidate(Record):
    """One (depth, seed) of a sweep: how it ended, its quality on validation and test, and its cost."""

    depth: int = Field(description="Encoder blocks (pretrained: the checkpoint's bottom layers kept).")
    family: FamilyName = Field(
        "scratch", description="scratch (trained from scratch), or the name of the pretrained checkpoint whose bottom "
        "layers it fine-tuned (its folder's or hub id's, the folder above a generic one such as model/; unique in "
        "the run)."
    )
    seed: int = Field(1, description="Seed of initialisation and batching.")
    status: Status = Field(
        description="trained; cached (reused from an earlier, interrupted or identical sweep); pruned (dropped "
        "by successive halving); failed; screened (only a probe on its layer of a deeper network saw it: the "
        "search strategy's screen, never chosen by the rule)."
    )
    metrics: dict[str, float] = Field(
        {}, description="Validation accuracy, balanced_accuracy and macro_f1; the rule chooses by these."
    )
    test_metrics: dict[str, float] = Field({}, description="The same on the test split; reported, never chosen by.")
    cost: Cost | None = Field(None, description="What it costs; none for a failed candidate.")
    epochs: int = Field(0, description="Epochs trained in all.")
    finished: bool = Field(False, description="Early-stopped or at max_epochs: nothing left to train.")
    mlflow_run_id: str | None = Field(None, description="Its MLflow child run in this sweep.")
    source_run_id: str | None = Field(None, description="For a cached candidate: the run that trained it.")
    error: str | None = Field(None, description="For a failed candidate: why.")
    bundle: str | None = Field(None, description="Folder of its saved model (weights, config, tokenizer).")
    checkpoint: str | None = Field(None, description="Its full training state after the last epoch, to resume.")
    predictions: str | None = Field(
        None, description="File (.npz) of its validation rows' true and predicted classes, for the rule's paired "
        "bootstrap."
    )
    test_predictions: str | None = Field(
        None, description="File (.npz) of its test rows' true and predicted classes (for a fold of cross-fitting: "
        "the rows held out of it, selection.crossfit)."
    )
    history: list[float] = Field([], description="Validation macro-F1 after each epoch.")
    resumed_from: int | None = Field(
        None, description="The saved epoch its training continued from after an earlier attempt ended (a stop, a "
        "crash, a lost Dask worker); none when it trained in one go (a halving rung or an extension continuing it "
        "is not a resume)."
    )
    not_converged: bool = Field(
        False, description="Its validation metric was still rising when its budget ended: the best of the last "
        "`patience` epochs beat the best before them by more than sweep.convergence_gain."
    )
    teacher: str | None = Field(
        None, description="For a distilled student (its family then reads `<family>, distilled from <teacher>`): the "
        "candidate that taught it, e.g. `depth 6 seed 1`; its soft labels on the train rows were part of its loss."
    )
    taught_texts: int = Field(
        0, description="For a distilled student: the unlabelled texts (of --unlabeled) it also learnt its teacher's "
        "soft labels on, besides the train rows."
    )
    kept_twin: bool = Field(
        False, description="For a distilled student started from its trained plain twin (sweep.distill.start twin): "
        "no epoch its teacher taught beat the twin on the validation rows, so it kept the twin's weights; the rule "
        "leaves it out (it is its twin) and the Distillation sentence says so."
    )
    screen: list[Candidate] = Field(
        [], description="For the screen of the search strategy: the depths below it, as probes on its layers saw "
        "them (status screened, validation and test metrics, predictions)."
    )

    @property
    def usable(self) -> bool:
        """Whether the rule may choose it."""
        return self.status in USABLE_STATUSES

    @property
    def name(self) -> str:
        """`depth 2 seed 1` (`pretrained depth 2 seed 1`; a student `depth 2 seed 1, distilled from depth 6`), as logs
        and messages say it."""
        teacher = teacher_of(self.family)
        plain = f"{arm_label(base_family(self.family), self.depth)} seed {self.seed}"
        return plain if teacher is None else f"{plain}{DISTILLED}{teacher}"


def recent_gain(history: list[float], window: int) -> float | None:
    """How much the best of the last `window` epochs beats the best before them; None under two epochs."""
    if len(history) < 2:
        return None
    window = min(window, len(history) - 1)
    return max(history[-window:]) - max(history[:-window])


def still_rising(history: list[float], window: int, gain: float) -> bool:
    """Whether a validation curve was still rising when training ended: its best before the last `window` epochs
    does not stand in for their best within `gain` (evidence.margin.within), i.e. they gained more than
    `gain` (a single epoch tells nothing: rising)."""
    recent = recent_gain(history, window)
    return recent is None or not within(-recent, gain)


def arm_label(family: str, depth: int, named: bool | None = None) -> str:
    """`depth 2`, or `pretrained depth 2`: a scratch depth is named by its family only when `named` says so
    (a sweep that holds several families), a pretrained one always; a student as `depth 2, distilled from depth 6`."""
    base, teacher = base_family(family), teacher_of(family)
    plain = f"{base} depth {depth}" if named or (named is None and base != "scratch") else f"depth {depth}"
    return plain if teacher is None else f"{plain}{DISTILLED}{teacher}"


# A distilled student is an arm of its own (the rule, halving, the plots and the summary key arms by (family, depth)):
# its family is its plain twin's with the teacher after this mark, so it reads as what it is wherever it is named.
DISTILLED = ", distilled from "


def student_family(family: str, teacher: str) -> str:
    """The family of `family`'s students of `teacher` (an arm's label, `depth 6`): `scratch, distilled from depth 6`."""
    return f"{family}{DISTILLED}{teacher}"


def base_family(family: str) -> str:
    """The family a student's network is of (its plain twin's); a plain family itself."""
    return family.split(DISTILLED, 1)[0]


def teacher_of(family: str) -> str | None:
    """The teacher's label of a student's family (`depth 6`); None for a plain family."""
    parts = family.split(DISTILLED, 1)
    return parts[1] if len(parts) == 2 else None
