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
from pydantic import Field
from tokenizers import Tokenizer

from depthfinder.encoder.coded import CODED, Coding, coded_file
from depthfinder.encoder.export import OnnxNetwork, export_onnx, quantize
from depthfinder.encoder.latency import NOISY, ROUNDS, Measured, measure
from depthfinder.encoder.serving import TOKENIZER_FILE, Network, TextClassifier, encode_texts, pad_batch
from depthfinder.encoder.size import INT8_PRUNED, weights_mb
from depthfinder.encoder.vocabulary import kept_ids, prunable, prune_network, prune_tokenizer, token_counts
from depthfinder.evidence.bootstrap import Interval, metric_interval, paired_interval
from depthfinder.evidence.margin import within
from depthfinder.evidence.metrics import classification_metrics
from depthfinder.runtime.records import Record

ONNX_FILE, INT8_FILE, CODED_FILE = "model.onnx", "model-int8.onnx", "model-int8-coded.onnx"
PRUNED, PRUNED_BUNDLE = "torch-pruned", "pruned-bundle"
# How the sentence names each form judged against the torch model, in the order it gives them.
FORM_LABELS = {PRUNED: "pruned vocabulary", "onnx-int8": "int8 ONNX", CODED: "int8 ONNX with the unused rows coded",
               "onnx": "ONNX"}
BATCHES = (1, 32)
# Timed forwards per variant per round of the latency harness, by batch size, over the test split's texts in turn.
REPEATS = {1: 7, 32: 2}


class Variant(Record):
    """One form of the chosen model, measured on the test split."""

    name: str = Field(description="torch, torch-pruned, onnx (fp32), onnx-int8 or onnx-int8-coded.")
    metrics: dict[str, float] = Field(description="Test accuracy, balanced accuracy, macro-F1.")
    latency_ms: dict[str, float] = Field(
        description="At batch 1 and 32 (b1_p50, ...), ms, per forward of test texts as served (padded, taken in "
        "turn; after the sweep, so not the cost table's figure): p50 (the median of the interleaved rounds' medians), "
        "p95 (of every timed call), low and high (the lowest and highest round median)."
    )
    size_mb: float = Field(description="Size of its weights file, MiB.")
    shipped: bool = Field(description="Registered with the version: within the deployment margin of the torch model.")
    file: str | None = Field(None, description="Its file (ONNX variants).")
    metric_low: float | None = Field(
        None, description="The lower end of the bootstrap interval of its test metric (the rule's) at the rule's "
        "confidence; none by means only."
    )
    metric_high: float | None = Field(None, description="Its upper end.")
    vs_torch: Interval | None = Field(
        None, description="Its test metric minus the torch model's, with the paired bootstrap interval at the rule's "
        "confidence (every variant but torch; none by means only)."
    )
    pruned: bool = Field(
        False, description="It carries the vocabulary pruned to the task's texts (train and validation, and the pool; "
        "torch-pruned, and the ONNX variants "
        "when torch-pruned ships: they are made from it)."
    )


class Pruning(Record):
    """What pruning the vocabulary to the task's texts kept and saved (the torch-pruned variant says how it scored)."""

    kept: int = Field(description="Tokens the pruned vocabulary keeps: those the train split uses min_count times or "
                      "more, the special tokens and every single character and continuation.")
    vocabulary: int = Field(description="Tokens of the model's own vocabulary.")
    min_count: int = Field(description="How often a token had to occur in the train split to be kept.")
    saved_mb: float = Field(description="MiB of torch weights it saves (the embedding rows it drops).")
    saved_share: float = Field(description="Their share of the torch model's weights.")
    bundle: str | None = Field(None, description="The pruned model's bundle, written when the gate ships it: what "
                               "the version registers.")

    def text(self) -> str:
        """`kept 8,773 of 30,522 tokens, saving 33.8 MiB (57%)`."""
        return (f"kept {self.kept:,} of {self.vocabulary:,} tokens, saving {self.saved_mb:.3g} MiB "
                f"({self.saved_share:.0%})")


class Deployment(Record):
    """What the chosen model's variants scored and cost, and which ship."""

    metric: str = Field(description="The metric they were judged by (the rule's), on the test split.")
    margin: float = Field(
        description="How much of it a variant may lose against the torch model: the deployment margin "
        "(sweep.deployment_margin), not the depth rule's tolerance."
    )
    variants: list[Variant] = Field(description="torch first, then each ONNX variant.")
    sentence: str = Field(description="What was measured and shipped, in a sentence.")
    latency_noisy: str | None = Field(
        None, description="Why the variants' latencies cannot be compared (a noisy machine: they contradict their "
        "equal FLOPs or the cost table even when measured again); none when they can. No speed-up is stated then."
    )
    hf_folder: str | None = Field(None, description="Its standard Hugging Face folder, when it is one.")
    pruning: Pruning | None = Field(
        None, description="What pruning the vocabulary kept and saved; none when it was not tried (no train texts "
        "given, a tokenizer that is not WordPiece, or nothing to prune: the sentence says which)."
    )
    tokenizer_file: str | None = Field(
        None, description="The tokenizer.json the ONNX files take (pruned with them when torch-pruned ships)."
    )
    coding: Coding | None = Field(
        None, description="What the onnx-int8-coded form kept exact and coded (encoder.coded); none when it was not "
        "made (no texts of the task given, no ONNX Runtime, or the pruned vocabulary shipped: its forms are smaller)."
    )

    def shipped_files(self) -> list[str]:
        """The files of the ONNX variants that ship."""
        return [variant.file for variant in self.variants if variant.shipped and variant.file]

    def variant(self, name: str) -> Variant | None:
        return next((variant for variant in self.variants if variant.name == name), None)

    @property
    def bundle(self) -> str | None:
        """The bundle the version registers instead of the candidate's: the pruned model's, when it ships."""
        pruned = self.variant(PRUNED)
        return self.pruning.bundle if self.pruning is not None and pruned is not None and pruned.shipped else None


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


def _made_forms(network: Network, tokenizer: Tokenizer, labels: list[str], texts: list[str], truths: list[str],
                metric: str, margin: float, folder: Path, confidence: float | None, train_texts: list[str] | None,
                min_count: int, limit_mb: float | None) -> _Forms:
    """Prune (to the tokens `train_texts` use `min_count` times or more), export and quantise the network into
    `folder`, and label `texts` with every form: the ONNX forms are made from the pruned model when it is within
    `margin` of torch on them, and the int8 form with the unused rows coded is made when the full vocabulary is the
    base (as finely as the size limit `limit_mb` allows)."""
    classifiers = {"torch": TextClassifier(network, tokenizer, labels)}
    predicted = {"torch": classifiers["torch"].predict(texts)}
    intervals: dict[str, Interval | None] = {}
    notes, pruning, base = [], None, classifiers["torch"]
    if train_texts is not None:
        pruning, pruned, why = _pruned(network, tokenizer, labels, train_texts, min_count)
        notes += [why] if why else []
        if pruned is not None:
            classifiers[PRUNED], predicted[PRUNED] = pruned, pruned.predict(texts)
            intervals[PRUNED] = _vs_torch(truths, predicted, PRUNED, metric, confidence)
            if _ships(predicted, intervals[PRUNED], truths, PRUNED, metric, margin):
                from depthfinder.encoder.bundle import save_bundle

                bundle = save_bundle(folder / PRUNED_BUNDLE, pruned.network, pruned.tokenizer, labels)
                pruning, base = pruning.model_copy(update={"bundle": str(bundle.resolve())}), pruned
    files, tokenizer_file = _onnx_forms(base, labels, folder, classifiers)
    coding = None
    if files and train_texts is not None and base is classifiers["torch"]:  # the full vocabulary ships
        coding, files[CODED], classifiers[CODED] = _coded_form(base, train_texts, folder, limit_mb)
    if not files:
        notes.append("ONNX variants not measured: onnxruntime is not installed (pip install 'depthfinder[onnx]')")
    for name, classifier in classifiers.items():
        if name not in predicted:  # torch's and the pruned model's are made above
            predicted[name] = classifier.predict(texts)
        if name != "torch" and name not in intervals:
            intervals[name] = _vs_torch(truths, predicted, name, metric, confidence)
    return _Forms(classifiers, predicted, intervals, files, tokenizer_file, pruning, coding,
                  base is not classifiers["torch"], notes)


def measure_deployment(
    network: Network, tokenizer: Tokenizer, labels: list[str], texts: list[str], truths: list[str], metric: str,
    margin: float, folder: Path, confidence: float | None = 0.9, expected_ms: float | None = None,
    train_texts: list[str] | None = None, min_count: int = 1, limit_mb: float | None = None,
) -> Deployment:
    """Prune, export and quantise the network into `folder`, measure every variant on the labelled test texts (their
    latencies in the same rounds, checked against `expected_ms`, the cost table's batch-1 p50 of the torch model),
    and say which ship (within `margin`, the deployment margin, of the torch model's `metric`, by the paired
    bootstrap at `confidence`; None: by the metric alone). With `train_texts`, the vocabulary is pruned to the
    tokens they use `min_count` times or more; when that form ships, its bundle is written to `folder` and the ONNX
    variants are made from it. Under a size limit (`limit_mb`) the coded form is coded as finely as it allows."""
    forms = _made_forms(network, tokenizer, labels, texts, truths, metric, margin, folder, confidence, train_texts,
                        min_count, limit_mb)
    classifiers, predicted, files = forms.classifiers, forms.predicted, forms.files
    timed = {batch: _timed(classifiers, texts, batch, expected_ms if batch == 1 else None) for batch in BATCHES}
    measured = {}
    for name, classifier in classifiers.items():
        latency = {f"b{batch}_{key}": getattr(timed[batch].latencies[name], key) for batch in BATCHES
                   for key in ("p50", "p95", "low", "high")}
        _, low, high = (metric_interval(truths, predicted[name], metric, confidence) if confidence is not None
                        else (None, None, None))
        measured[name] = Variant(name=name, metrics=classification_metrics(truths, predicted[name]),
                                 latency_ms=latency, size_mb=_size_mb(classifier, files.get(name)), shipped=False,
                                 file=str(files[name]) if name in files else None, vs_torch=forms.intervals.get(name),
                                 metric_low=low, metric_high=high,
                                 pruned=name == PRUNED or (name in files and forms.pruned_base))
    judged = apply_gate(measured, metric, margin, "; ".join(forms.notes), timed[1].noisy, forms.pruning)
    judged = judged.model_copy(update={"pruning": forms.pruning, "tokenizer_file": forms.tokenizer_file,
                                       "coding": forms.coding})
    return beside_cost_table(judged, expected_ms)


def forms_passed(
    network: Network, tokenizer: Tokenizer, labels: list[str], texts: list[str], truths: list[str], metric: str,
    margin: float, train_texts: list[str], min_count: int = 1, limit_mb: float | None = None,
) -> list[str]:
    """The forms (encoder.size's names) that pass the validation check on the labelled `texts`, torch always among them:
    a candidate's validation rows, so that the rule knows which depth can ship within a size limit before it chooses.
    The forms are those the deployment makes (the vocabulary pruned to `train_texts`, which should not hold `texts`, as
    the deployed vocabulary does not hold the test split; int8 ONNX, of the pruned model when it passes; int8 with the
    unused rows coded otherwise, as finely as `limit_mb` allows), without their latencies; their files are made in a
    temporary folder and deleted. A check, not the gate: a form passes unless its `metric` is more than `margin` below
    torch's on these rows (by the mean), since a few hundred validation rows cannot show a form that changes a handful
    of labels within a margin of 0.01 (a paired interval there spans about ±0.01-0.02) and refusing it for that left
    forms the test split's gate ships out of the rule's choice; the deployment gate judges the chosen depth's forms on
    the test split by their intervals."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="depthfinder-gate-") as folder:
        forms = _made_forms(network, tokenizer, labels, texts, truths, metric, margin, Path(folder), None,
                            train_texts, min_count, limit_mb)
    return [INT8_PRUNED if name == "onnx-int8" and forms.pruned_base else name for name in forms.classifiers
            if name == "torch" or _ships(forms.predicted, None, truths, name, metric, margin)]


def _pruned(network: Network, tokenizer: Tokenizer, labels: list[str], train_texts: list[str], min_count: int
            ) -> tuple[Pruning | None, TextClassifier | None, str]:
    """The model with its vocabulary pruned to the train texts and what that keeps and saves; or why it is not
    tried (a tokenizer that is not WordPiece or holds more tokens than the embedding, or a train split that uses
    every token)."""
    if (why := prunable(tokenizer, network)) is not None:
        return None, None, f"vocabulary not pruned: {why}"
    kept = kept_ids(tokenizer, token_counts(tokenizer, train_texts), min_count)
    vocabulary = tokenizer.get_vocab_size()
    if len(kept) >= vocabulary:
        return None, None, "vocabulary not pruned: the train split uses every token of it"
    pruned = prune_network(network, kept)
    full, small = weights_mb(network), weights_mb(pruned)
    pruning = Pruning(kept=len(kept), vocabulary=vocabulary, min_count=min_count, saved_mb=full - small,
                      saved_share=(full - small) / full)
    return pruning, TextClassifier(pruned, prune_tokenizer(tokenizer, kept), labels), ""


def _vs_torch(truths: list[str], predicted: dict[str, list[str]], name: str, metric: str,
              confidence: float | None) -> Interval | None:
    """The variant's metric minus the torch model's, with its paired interval (None by means only)."""
    if confidence is None:
        return None
    return paired_interval(truths, predicted[name], predicted["torch"], metric, confidence)


def _ships(predicted: dict[str, list[str]], interval: Interval | None, truths: list[str], name: str, metric: str,
           margin: float) -> bool:
    """The gate: the variant's metric within the margin of the torch model's, by its interval where there is one."""
    scores = {key: classification_metrics(truths, predicted[key])[metric] for key in (name, "torch")}
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
        classifiers[name] = TextClassifier(OnnxNetwork(path, base.network.cfg), base.tokenizer, labels)
    base.tokenizer.save(str(folder / TOKENIZER_FILE))
    return files, str(folder / TOKENIZER_FILE)


def _coded_form(base: TextClassifier, texts: list[str], folder: Path, limit_mb: float | None
                ) -> tuple[Coding, Path, TextClassifier]:
    """The int8 ONNX file of `base` with the embedding rows `texts` never use coded (encoder.coded), as finely as
    `limit_mb` allows: the whole vocabulary, for the texts pruning would cut into pieces; its coding, file and
    classifier (the same tokenizer)."""
    network, coding, path = coded_file(base.network, base.tokenizer, texts, folder / CODED_FILE, limit_mb)
    return coding, path, TextClassifier(OnnxNetwork(path, network.cfg), base.tokenizer, base.labels)


def _size_mb(classifier: TextClassifier, path: Path | None) -> float:
    """The size of a variant's weights: its file, or the torch network's parameters."""
    return path.stat().st_size / 2**20 if path is not None else weights_mb(classifier.network)


def _timed(classifiers: dict[str, TextClassifier], texts: list[str], batch: int, expected_ms: float | None,
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


def apply_gate(measured: dict[str, Variant], metric: str, margin: float, note: str, noisy: str | None = None,
               pruning: Pruning | None = None) -> Deployment:
    """The variants with `shipped` decided, and the sentence (no speed-up stated when the latencies are noisy)."""
    reference = measured["torch"]
    base = reference.metrics[metric]
    variants, clauses = [reference.model_copy(update={"shipped": True})], []
    for name in FORM_LABELS:
        if (variant := measured.get(name)) is None:
            continue
        value, interval = variant.metrics[metric], variant.vs_torch
        ships = within(value - base, margin, None if interval is None else interval.low)
        variants.append(variant.model_copy(update={"shipped": ships}))
        verdict = "shipped" if ships else _refusal(value - base, interval, margin)
        paired = f" ({interval.text()})" if interval is not None and interval.low != interval.high else ""
        clauses.append(f"{_form_label(variant, pruning)}: {metric} {value:.3f} vs {base:.3f}{paired}, "
                       f"{speed_text(variant, reference, noisy)}, {variant.size_mb:.2f} MiB: {verdict}")
    if noisy and clauses:
        clauses.append(f"latencies not compared ({noisy})")
    return Deployment(metric=metric, margin=margin, variants=variants,
                      sentence="; ".join([*clauses, *([note] if note else [])]), latency_noisy=noisy)


def _form_label(variant: Variant, pruning: Pruning | None) -> str:
    """`int8 ONNX`, `int8 ONNX of the pruned model`, or `pruned vocabulary (kept ... saving ...)`."""
    label = FORM_LABELS[variant.name]
    if variant.name == PRUNED and pruning is not None:
        return f"{label} ({pruning.text()})"
    return f"{label} of the pruned model" if variant.pruned else label


class TriedDepth(Record):
    """A depth none of whose forms met a size limit: every form weighed, and the gate's measurements where it ran."""

    depth: str = Field(description="The depth, as the decision names it (`depth 2`, `MiniLM depth 2`).")
    sizes_mb: dict[str, float] = Field({}, description="Each form weighed (encoder.size), MiB.")
    passed_mb: dict[str, float] = Field(
        {}, description="Those of them that passed the check on the validation rows (Cost.passed_mb), MiB."
    )
    over: list[str] = Field(
        [], description="The hard limits it exceeds before the gate (`latency_ms_p50 7.2 > max_latency_ms 5`), where "
        "the rule left it out; none where the gate measured its forms."
    )
    deployment: Deployment | None = Field(
        None, description="Its forms as the deployment gate measured them on the test split (size, score, interval, "
        "shipped or refused); none where the rule left the depth out because its smallest form was over the limit."
    )


class UnmetLimit(Record):
    """The verdict on hard limits that no depth meets (the summary's `unmet`): a size limit no form the gate ships
    meets at any depth the rule let ship, or limits (size, latency, parameters) every depth exceeds before the gate;
    every form or depth tried, and nothing registered. An outcome the user set up, not a fault."""

    limit_mb: float | None = Field(None, description="The size limit, max_size_mb, where one was set.")
    limits: str = Field("", description="Every hard limit set, `max_latency_ms=5, max_size_mb=8`.")
    tried: list[TriedDepth] = Field(description="Each depth tried, in the order tried.")

    def sentence(self) -> str:
        """`no form within max_size_mb 8: the smallest, depth 2's onnx-int8-pruned, weighs 5.69 MiB at macro_f1
        0.951 against the full model's 0.955 (−0.004 [−0.011, +0.001]), refused by the deployment gate; nothing
        registered (...)`; where the gate never ran, the smallest form weighed."""
        measured = [(tried.depth, variant, tried.deployment) for tried in self.tried if tried.deployment
                    for variant in tried.deployment.variants]
        if measured:
            depth, small, deployment = min(measured, key=lambda found: found[1].size_mb)
            full, metric = deployment.variants[0], deployment.metric
            against = f" ({small.vs_torch.text()})" if small.vs_torch is not None else ""
            verdict = "shipped by the gate" if small.shipped else "refused by the deployment gate"
            score = (f" at {metric} {small.metrics[metric]:.3f} against the full model's {full.metrics[metric]:.3f}"
                     f"{against}, {verdict}" if small is not full else f" at {metric} {small.metrics[metric]:.3f}")
            name, size = small.name, small.size_mb
        elif self.limit_mb is not None and all(any(v.startswith("size_mb") for v in t.over) for t in self.tried):
            judged = any(tried.passed_mb for tried in self.tried)
            depth, name, size = min(((tried.depth, form, mb) for tried in self.tried
                                     for form, mb in (tried.passed_mb if judged else tried.sizes_mb).items()),
                                    key=lambda found: found[2])
            refused = sorted({form for tried in self.tried for form, mb in tried.sizes_mb.items()
                              if mb <= self.limit_mb and form not in tried.passed_mb})
            passed = ", the smallest that passed the check on the validation rows"
            score = (f"{passed} (it left out {', '.join(refused)} within the limit: each lost more than the deployment "
                     "margin there)" if judged and refused else
                     ", over the limit like every form of every depth" + ("" if judged else " (none was scored)"))
        else:  # another limit, or several, leave out every depth
            over = "; ".join(f"{tried.depth} ({' and '.join(tried.over)})" for tried in self.tried)
            return f"no depth within the hard limits {self.limits}: {over}; nothing registered (raise the limits)"
        return (f"no form within max_size_mb {self.limit_mb:g}: the smallest, {depth}'s {name}, weighs {size:.2f} "
                f"MiB{score}; nothing registered (raise the limit or the deployment margin)")


def within_size(deployment: Deployment, limit: float | None) -> Deployment:
    """The deployment whose sentence says, under a size limit (`max_size_mb`), which shipped form is the smallest and
    whether it is within the limit: the rule held each depth to its smallest form's size before the gate judged the
    forms, and the gate may have refused that form."""
    shipped = [variant for variant in deployment.variants if variant.shipped]
    if limit is None or not shipped:
        return deployment
    small = min(shipped, key=lambda variant: variant.size_mb)
    name = "torch" if small.name == "torch" else _form_label(small, None)
    if small.size_mb <= limit:
        clause = f"the smallest form shipped, {name}, weighs {small.size_mb:.2f} MiB: within max_size_mb {limit:g}"
    else:
        clause = (f"no form the gate shipped is within max_size_mb {limit:g}: the smallest, {name}, weighs "
                  f"{small.size_mb:.2f} MiB")
    return deployment.model_copy(update={"sentence": f"{deployment.sentence}; {clause}"})


def speed_text(variant: Variant, reference: Variant, noisy: str | None) -> str:
    """`2.1x as fast as torch at batch 1 (0.21 ms vs 0.44 ms, p50 over 7 interleaved rounds)`, or, on a noisy
    machine or for the torch model with its vocabulary pruned (the same network), the figures without a ratio."""
    mine, theirs = variant.latency_ms["b1_p50"], reference.latency_ms["b1_p50"]
    figures = f"{mine:.3g} ms vs {theirs:.3g} ms at batch 1"
    if variant.name == PRUNED:  # the same network and FLOPs, a smaller table to look rows up in: any ratio is noise
        return f"{figures} (the same network as torch's: no speed-up stated)"
    if noisy or not mine:
        return f"{figures} ({NOISY}: no speed-up stated)"
    ratio = theirs / mine
    relation = f"{ratio:.1f}x as fast as torch" if ratio >= 1 else f"{1 / ratio:.1f}x as slow as torch"
    return f"{relation} ({figures}, p50 of interleaved rounds)"


def beside_cost_table(deployment: Deployment, cost_ms: float | None) -> Deployment:
    """The deployment whose sentence, where it gives torch's batch-1 latency (beside ONNX forms), says why the page
    shows another for the same network: `cost_ms`, the cost table's, measures something else (and is written as
    its table writes it, so that the two read as the same figure)."""
    torch_form = deployment.variant("torch")
    if not cost_ms or torch_form is None or len(deployment.variants) < 2:
        return deployment
    clause = (f"torch's {torch_form.latency_ms['b1_p50']:.3g} ms here is per test text as served (each text padded "
              "into a batch of one, in rounds interleaved with the ONNX forms after the sweep); the cost table's "
              f"{cost_ms:.2f} ms for the same network is its forward alone on one input of the median train length, "
              "timed as its depth finished training")
    return deployment.model_copy(update={"sentence": f"{deployment.sentence}; {clause}"})


def _refusal(difference: float, interval: Interval | None, margin: float) -> str:
    """Why a variant does not ship: it loses more than the margin, or the test rows do not show it within (the
    sentence calls the deployment margin the gate's tolerance, as it always has)."""
    if not within(difference, margin) or interval is None:
        return f"not shipped (it loses more than the tolerance {margin:g})"
    return (f"not shipped (the test rows do not show it within the tolerance {margin:g}: its interval reaches "
            f"{interval.low:+.3f})".replace("-", "\u2212"))
