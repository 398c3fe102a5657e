"""What the deployment says: each form of the chosen model as measured (Variant, Pruning, Deployment), the gate that
decides which ship (apply_gate: within the deployment margin of the torch model by the rule's own test), the
sentences that give its verdict, and the verdict on a size limit no form meets (UnmetLimit). encoder.deployment makes
and measures the forms; everything that reads a deployment (the summary, the card, the registry, the flows) reads
these records.
"""

from __future__ import annotations

from pydantic import Field

from depthfinder.encoder.coded import CODED, Coding
from depthfinder.encoder.latency import NOISY
from depthfinder.evidence.bootstrap import Interval
from depthfinder.evidence.margin import within
from depthfinder.runtime.records import Record

PRUNED = "torch-pruned"
# How the sentence names each form judged against the torch model, in the order it gives them.
FORM_LABELS = {PRUNED: "pruned vocabulary", "onnx-int8": "int8 ONNX", CODED: "int8 ONNX with the unused rows coded",
               "onnx": "ONNX"}


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
            refused = sorted({form for tried in self.tried for form, mb in tried.sizes_mb.items()
                              if mb <= self.limit_mb and form not in tried.passed_mb})
            # Where forms within the limit were refused, the smallest that passed is what could ship; where every
            # form is over it, the smallest of them all says how far off the limit is, passed or not.
            left_out = judged and bool(refused)
            depth, name, size = min(((tried.depth, form, mb) for tried in self.tried
                                     for form, mb in (tried.passed_mb if left_out else tried.sizes_mb).items()),
                                    key=lambda found: found[2])
            passed = ", the smallest that passed the check on the validation rows"
            score = (f"{passed} (it left out {', '.join(refused)} within the limit: each lost more than the deployment "
                     "margin there)" if left_out else
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
