"""The chosen model as it will run: torch, ONNX and int8 ONNX, each measured the way the choice was made.

The network is exported to ONNX (torch's TorchScript-based exporter, dynamic batch and sequence axes) and
quantised to int8 weights with float activations (encoder.export.quantize). Each variant labels the test split
through the same tokenizer and length-sorted batching as the torch model (encoder.serving.TextClassifier), so its
metric is the one the promotion compares, and its latency is timed on the same texts at batch 1 and batch 32, every
variant in the same interleaved rounds (encoder.latency: a figure contradicted by the variants' equal FLOPs, or by the
cost table's figure for the torch model, is measured again, and marked a noisy machine's if it still is, and then
no speed-up is stated). A variant
ships only when it is within the deployment margin (`deployment_margin`, a setting of its own: loosening the depth
rule's tolerance does not loosen this gate) of the torch model by the rule's own test
(evidence.margin.within): its test metric no more than the margin below the torch model's, and, at the
rule's confidence, the lower end of the paired bootstrap interval of (variant − torch) on the same test rows too.
Quantisation can lose accuracy silently, and a model that is fast but wrong defeats the purpose. ONNX Runtime is
the extra `depthfinder[onnx]`; without it the chosen model ships as torch alone, and the decision says why.

Given the train split's texts, the model with its vocabulary pruned to them (encoder.vocabulary) is a form too,
`torch-pruned`, judged against the torch model by the same gate. When it ships, it is what the version registers
(its bundle, `Deployment.bundle`) and every other form is made from it: the ONNX files, with the pruned
tokenizer.json beside them, and the Hugging Face folder. Every form is judged against the unpruned torch model, so
pruning and quantisation together never lose more than the one margin. When it does not ship (texts the model
meets hold words the task's texts never used, which pruning cuts into pieces the network never learned), the int8
ONNX form with those words' embedding rows coded (encoder.coded: the whole vocabulary and tokenizer, a byte per
four numbers of a rare row) is judged too: the form an edge device can hold where pruning loses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from depthfinder.encoder.coded import CODED, Coding, coded_file
from depthfinder.encoder.export import OnnxNetwork, export_onnx, quantize
from depthfinder.encoder.latency import ROUNDS, Measured, measure
from depthfinder.encoder.serving import TOKENIZER_FILE, ModelInput, TextClassifier, encode_texts, pad_batch
from depthfinder.encoder.size import INT8_PRUNED, weights_mb
from depthfinder.encoder.verdict import PRUNED, Deployment, Pruning, Variant, apply_gate, beside_cost_table
from depthfinder.encoder.vocabulary import kept_ids, prunable, prune_network, prune_tokenizer, token_counts
from depthfinder.evidence.bootstrap import Interval, metric_interval, paired_interval
from depthfinder.evidence.margin import within
from depthfinder.evidence.metrics import quality_metrics

ONNX_FILE, INT8_FILE, CODED_FILE = "model.onnx", "model-int8.onnx", "model-int8-coded.onnx"
PRUNED_BUNDLE = "pruned-bundle"
BATCHES = (1, 32)
# Timed forwards per variant per round of the latency harness, by batch size, over the test split's texts in turn.
REPEATS = {1: 7, 32: 2}


@dataclass(frozen=True)
class Gate:
    """What judges a form against the torch model: the rule's `metric`, the deployment `margin` a form may lose, and
    the paired bootstrap's `confidence` (None: by the mean alone)."""

    metric: str
    margin: float
    confidence: float | None = 0.9


@dataclass(frozen=True)
class Shrinking:
    """How the forms shrink the vocabulary: pruned to the tokens `texts` (the texts the run may read without labels)
    use `min_count` times or more, the int8 form with the rows they never use coded as finely as `limit_mb` allows;
    without `texts`, neither is made."""

    texts: list[str] | None = None
    min_count: int = 1
    limit_mb: float | None = None


@dataclass
class _Forms:
    """Every form of a network made for one gate, with its predictions of the gate's texts: the classifiers (torch
    first), their files (the ONNX forms), their paired intervals against torch, what pruning kept, what coding
    coded, the forms' base (the pruned model when the gate passed it), and what was not tried and why."""

    classifiers: dict[str, TextClassifier]
    predicted: dict[str, list[str]]
    intervals: dict[str, Interval | None]
    files: dict[str, Path]
    tokenizer_file: str | None
    pruning: Pruning | None
    coding: Coding | None
    pruned_base: bool
    notes: list[str]


def _made_forms(model: TextClassifier, texts: list[ModelInput], truths: list[str], gate: Gate, folder: Path,
                shrinking: Shrinking) -> _Forms:
    """Prune (`shrinking`), export and quantise the model into `folder`, and label `texts` with every form: the ONNX
    forms are made from the pruned model when it is within the gate's margin of torch on them, and the int8 form
    with the unused rows coded is made when the full vocabulary is the base."""
    metric, margin, confidence = gate.metric, gate.margin, gate.confidence
    classifiers = {"torch": model}
    predicted = {"torch": model.predict(texts)}
    intervals: dict[str, Interval | None] = {}
    notes, pruning, base = [], None, model
    if shrinking.texts is not None:
        pruning, pruned, why = _pruned(model, shrinking)
        notes += [why] if why else []
        if pruned is not None:
            classifiers[PRUNED], predicted[PRUNED] = pruned, pruned.predict(texts)
            intervals[PRUNED] = _vs_torch(truths, predicted, PRUNED, metric, confidence)
            if _ships(predicted, intervals[PRUNED], truths, PRUNED, metric, margin):
                from depthfinder.encoder.bundle import save_bundle

                bundle = save_bundle(folder / PRUNED_BUNDLE, pruned.network, pruned.tokenizer, model.labels,
                                     model.inputs)
                pruning, base = pruning.model_copy(update={"bundle": str(bundle.resolve())}), pruned
    files, tokenizer_file = _onnx_forms(base, model.labels, folder, classifiers)
    coding = None
    if files and shrinking.texts is not None and base is model:  # the full vocabulary ships
        coding, files[CODED], classifiers[CODED] = _coded_form(base, shrinking.texts, folder, shrinking.limit_mb)
    if not files:
        notes.append("ONNX variants not measured: onnxruntime is not installed (pip install 'depthfinder[onnx]')")
    for name, classifier in classifiers.items():
        if name not in predicted:  # torch's and the pruned model's are made above
            predicted[name] = classifier.predict(texts)
        if name != "torch" and name not in intervals:
            intervals[name] = _vs_torch(truths, predicted, name, metric, confidence)
    return _Forms(classifiers, predicted, intervals, files, tokenizer_file, pruning, coding, base is not model, notes)


def measure_deployment(model: TextClassifier, texts: list[ModelInput], truths: list[str], gate: Gate, folder: Path,
                       shrinking: Shrinking = Shrinking(), expected_ms: float | None = None) -> Deployment:
    """Prune, export and quantise the model into `folder`, measure every variant on the labelled test texts (their
    latencies in the same rounds, checked against `expected_ms`, the cost table's batch-1 p50 of the torch model),
    and say which ship (`gate`: within its margin of the torch model's metric, by the paired bootstrap at its
    confidence; None: by the metric alone). With `shrinking.texts`, the vocabulary is pruned to them; when that form
    ships, its bundle is written to `folder` and the ONNX variants are made from it; when it does not, the int8 form
    with the unused rows coded is made (as finely as `shrinking.limit_mb` allows)."""
    forms = _made_forms(model, texts, truths, gate, folder, shrinking)
    classifiers, predicted, files = forms.classifiers, forms.predicted, forms.files
    timed = {batch: _timed(classifiers, texts, batch, expected_ms if batch == 1 else None) for batch in BATCHES}
    measured = {}
    for name, classifier in classifiers.items():
        latency = {f"b{batch}_{key}": getattr(timed[batch].latencies[name], key) for batch in BATCHES
                   for key in ("p50", "p95", "low", "high")}
        _, low, high = (metric_interval(truths, predicted[name], gate.metric, gate.confidence)
                        if gate.confidence is not None else (None, None, None))
        measured[name] = Variant(name=name, metrics=quality_metrics(truths, predicted[name], gate.metric),
                                 latency_ms=latency, size_mb=_size_mb(classifier, files.get(name)), shipped=False,
                                 file=str(files[name]) if name in files else None, vs_torch=forms.intervals.get(name),
                                 metric_low=low, metric_high=high,
                                 pruned=name == PRUNED or (name in files and forms.pruned_base))
    judged = apply_gate(measured, gate.metric, gate.margin, "; ".join(forms.notes), timed[1].noisy, forms.pruning)
    judged = judged.model_copy(update={"pruning": forms.pruning, "tokenizer_file": forms.tokenizer_file,
                                       "coding": forms.coding})
    return beside_cost_table(judged, expected_ms)


def forms_passed(model: TextClassifier, texts: list[ModelInput], truths: list[str], gate: Gate, shrinking: Shrinking
                 ) -> list[str]:
    """The forms (encoder.size's names) that pass the validation check on the labelled `texts`, torch always among them:
    a candidate's validation rows, so that the rule knows which depth can ship within a size limit before it chooses.
    The forms are those the deployment makes (the vocabulary pruned to `shrinking.texts`, which should not hold
    `texts`, as the deployed vocabulary does not hold the test split; int8 ONNX, of the pruned model when it passes;
    int8 with the unused rows coded otherwise, as finely as `shrinking.limit_mb` allows), without their latencies;
    their files are made in a temporary folder and deleted. A check, not the gate: a form passes unless its metric is
    more than the gate's margin below torch's on these rows (by the mean: the gate's confidence is not used), since a
    few hundred validation rows cannot show a form that changes a handful of labels within a margin of 0.01 (a paired
    interval there spans about ±0.01-0.02) and refusing it for that left forms the test split's gate ships out of the
    rule's choice; the deployment gate judges the chosen depth's forms on the test split by their intervals."""
    import tempfile

    by_mean = Gate(gate.metric, gate.margin, None)
    with tempfile.TemporaryDirectory(prefix="depthfinder-gate-") as folder:
        forms = _made_forms(model, texts, truths, by_mean, Path(folder), shrinking)
    return [INT8_PRUNED if name == "onnx-int8" and forms.pruned_base else name for name in forms.classifiers
            if name == "torch" or _ships(forms.predicted, None, truths, name, gate.metric, gate.margin)]


def _pruned(model: TextClassifier, shrinking: Shrinking) -> tuple[Pruning | None, TextClassifier | None, str]:
    """The model with its vocabulary pruned to `shrinking.texts` and what that keeps and saves; or why it is not
    tried (a tokenizer that is not WordPiece or holds more tokens than the embedding, or a train split that uses
    every token)."""
    network, tokenizer, min_count = model.network, model.tokenizer, shrinking.min_count
    if (why := prunable(tokenizer, network)) is not None:
        return None, None, f"vocabulary not pruned: {why}"
    kept = kept_ids(tokenizer, token_counts(tokenizer, shrinking.texts), min_count)
    vocabulary = tokenizer.get_vocab_size()
    if len(kept) >= vocabulary:
        return None, None, "vocabulary not pruned: the train split uses every token of it"
    pruned = prune_network(network, kept)
    full, small = weights_mb(network), weights_mb(pruned)
    pruning = Pruning(kept=len(kept), vocabulary=vocabulary, min_count=min_count, saved_mb=full - small,
                      saved_share=(full - small) / full)
    return pruning, TextClassifier(pruned, prune_tokenizer(tokenizer, kept), model.labels, model.inputs), ""


def _vs_torch(truths: list[str], predicted: dict[str, list[str]], name: str, metric: str,
              confidence: float | None) -> Interval | None:
    """The variant's metric minus the torch model's, with its paired interval (None by means only)."""
    if confidence is None:
        return None
    return paired_interval(truths, predicted[name], predicted["torch"], metric, confidence)


def _ships(predicted: dict[str, list[str]], interval: Interval | None, truths: list[str], name: str, metric: str,
           margin: float) -> bool:
    """The gate: the variant's metric within the margin of the torch model's, by its interval where there is one."""
    scores = {key: quality_metrics(truths, predicted[key], metric)[metric] for key in (name, "torch")}
    return within(scores[name] - scores["torch"], margin, None if interval is None else interval.low)


def _onnx_forms(base: TextClassifier, labels: list[str], folder: Path, classifiers: dict[str, TextClassifier]
                ) -> tuple[dict[str, Path], str | None]:
    """The ONNX and int8 ONNX files of `base` (the model that ships: pruned or not), with its tokenizer.json beside
    them, added to `classifiers`; nothing without ONNX Runtime."""
    try:
        import onnxruntime  # noqa: F401 (the extra that makes ONNX variants)
    except ImportError:
        return {}, None
    folder.mkdir(parents=True, exist_ok=True)
    files = {"onnx": export_onnx(base.network, folder / ONNX_FILE)}
    files["onnx-int8"] = quantize(files["onnx"], folder / INT8_FILE)
    for name, path in files.items():
        classifiers[name] = TextClassifier(OnnxNetwork(path, base.network.cfg), base.tokenizer, labels, base.inputs)
    base.tokenizer.save(str(folder / TOKENIZER_FILE))
    return files, str(folder / TOKENIZER_FILE)


def _coded_form(base: TextClassifier, texts: list[ModelInput], folder: Path, limit_mb: float | None
                ) -> tuple[Coding, Path, TextClassifier]:
    """The int8 ONNX file of `base` with the embedding rows `texts` never use coded (encoder.coded), as finely as
    `limit_mb` allows: the whole vocabulary, for the texts pruning would cut into pieces; its coding, file and
    classifier (the same tokenizer)."""
    network, coding, path = coded_file(base.network, base.tokenizer, texts, folder / CODED_FILE, limit_mb)
    return coding, path, TextClassifier(OnnxNetwork(path, network.cfg), base.tokenizer, base.labels, base.inputs)


def _size_mb(classifier: TextClassifier, path: Path | None) -> float:
    """The size of a variant's weights: its file, or the torch network's parameters."""
    return path.stat().st_size / 2**20 if path is not None else weights_mb(classifier.network)


def _timed(classifiers: dict[str, TextClassifier], texts: list[ModelInput], batch: int, expected_ms: float | None,
           rounds: int = ROUNDS) -> Measured:
    """Every variant's latency for one forward of `batch` test texts (taken in turn, padded as served), in the same
    `rounds` (encoder.latency)."""
    def forward(classifier: TextClassifier):
        cfg = classifier.network.cfg  # a pruned vocabulary numbers the same texts' tokens otherwise
        ids = encode_texts(classifier.tokenizer, texts, cfg.max_len)

        def call(number: int) -> object:
            rows = [ids[(number * batch + i) % len(ids)] for i in range(batch)]
            return classifier.network(*pad_batch(rows, cfg.pad_id))
        return call

    with torch.inference_mode():
        return measure({name: forward(c) for name, c in classifiers.items()}, "torch", expected_ms,
                       rounds=rounds, repeats=REPEATS[batch])
