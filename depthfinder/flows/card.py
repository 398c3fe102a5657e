"""The model card: what a reviewer of a registered version reads in the MLflow UI, without a terminal.

One Markdown text, written once per run and shown as the version's description, the registered model's (the
champion's card, and the promotion history as a table) and the sweep's parent run's note: the choice and why,
with its intervals and the depth curve; the audit's verdict; what changed since the champion; the promotion with
its numbers; what each deployable form scored and costs; the hashes a version is decided by; and how to load it.
"""

from __future__ import annotations

from depthfinder.encoder.serving import TAGS_COLUMN
from depthfinder.encoder.verdict import TriedDepth
from depthfinder.evidence.metrics import ENTITY_METRICS
from depthfinder.expectations.audit.report import cell, markdown_table
from depthfinder.expectations.changes.report import FORCED
from depthfinder.flows.summary import RunSummary
from depthfinder.selection.candidate import arm_label, teacher_of
from depthfinder.selection.decision import Decision
from depthfinder.selection.distillation import distillation_sentence
from depthfinder.selection.pool import pool_sentence
from depthfinder.selection.promotion import APART
from depthfinder.selection.reasons import depth_verdicts

# The plots the parent run keeps (flows.records.record_decision), linked through the MLflow server's artifact
# endpoint (relative, so it works under any host the UI is served from).
PLOT = "get-artifact?path=plots%2F{name}&run_uuid={run_id}"


def model_card(summary: RunSummary, fingerprint: dict[str, str]) -> str:
    """The card of the version `summary` registered."""
    model, rule = summary.model, summary.rule
    audit = summary.audit
    forced = summary.changes.policy.overridden if summary.changes is not None else None
    sections = [
        # The mark first: the versions table shows a description's first 25 characters or so.
        ("# " + (f"{FORCED.capitalize()} past a {forced} · " if forced else "")
         + f"{model.name} version {model.version}: {_model_label(model.family, model.depth)}"),
        *([f"**{FORCED.capitalize()}.** `--force` retrained although the comparison with version "
           f"{summary.changes.champion_version} said {forced}; see *What changed* below."] if forced else []),
        f"**Decision.** {_sentence(rule.reason)}",
        f"![quality by depth]({PLOT.format(name='metric_vs_depth.png', run_id=summary.mlflow_run_id)})",
        *([verdicts] if (verdicts := _verdicts(rule)) else []),
        *([f"**Cross-fitting.** {summary.crossfit.sentence().removeprefix('Cross-fitting: ')}"]
          if summary.crossfit is not None else []),
        *([f"**Distillation.** {_sentence(taught.removeprefix('Distillation: '))}"]
          if (taught := distillation_sentence(rule, summary.candidates, rule.metric)) else []),
        *([f"**Unlabelled pool.** {summary.pool.sentence().removeprefix('Unlabelled pool: ')}"]
          if summary.pool is not None else []),
        *([f"**Unlabelled texts.** {pool.removeprefix('Unlabelled texts: ')}"]
          if (pool := pool_sentence(rule, summary.rows_to_label)) else []),
        f"**Audit.** {audit.headline}.",
        f"**Promotion.** {'promoted to champion' if summary.promoted else 'not promoted'}: {summary.promotion}.",
        *filter(None, [promotion_rows(summary)]),
    ]
    if summary.changes is not None:
        sections.append(f"**What changed since version {summary.changes.champion_version}.** "
                        f"{_sentence(summary.changes.policy.reason)}")
    sections.append(_scores(summary))
    if len({c.family for c in summary.candidates}) > 1:
        sections.append(family_curves(summary))
    sections.append(f"**Served form.** {served_sentence(summary)}")
    if summary.deployment is not None:
        sections.append(f"**Deployable forms, on the test split.** {_sentence(summary.deployment.sentence)}")
    sections += [_hashes(fingerprint), _loading(summary)]
    return "\n\n".join(sections) + "\n"


def _model_label(family: str | None, depth: int) -> str:
    """`scratch depth 2`, or a student as `depth 2, distilled from depth 6`: which teacher taught the shipped model."""
    if family is not None and teacher_of(family) is not None:
        return arm_label(family, depth)
    return f"{family or 'scratch'} depth {depth}"


def promotion_rows(summary: RunSummary) -> str | None:
    """Which test rows promotion was judged on and which it reported apart, with both models' scores, as a table;
    None when every test row was judged on."""
    if not summary.rows_apart:
        return None
    metric = summary.rule.metric
    judged = ["judged on: the champion's own test rows", f"{summary.promotion_rows:,}",
              f"{summary.challenger_test_metrics[metric]:.3f}", f"{summary.champion_test_metrics[metric]:.3f}"]
    apart = [[f"apart: {APART[rows.standing]}", f"{rows.rows:,}", f"{rows.challenger:.3f}", f"{rows.champion:.3f}"]
             for rows in summary.rows_apart]
    return (f"**The test rows of the promotion** ({metric}).\n\n"
            + markdown_table(["test rows", "rows", "challenger", "champion"], [judged, *apart]))


# The forms of a version, as the card and the decision name them.
FORM_NAMES = {"torch": "torch", "torch-pruned": "torch with the pruned vocabulary", "onnx": "ONNX (fp32)",
              "onnx-int8": "int8 ONNX", "onnx-int8-coded": "int8 ONNX with the unused embedding rows coded"}


def served_sentence(summary: RunSummary) -> str:
    """Which form the version's MLflow model serves (torch, always: the pyfunc runs the torch network; with the
    pruned vocabulary when that shipped), under which alias, with its test metric and interval and its size; and
    which other forms ship beside it as files."""
    model, deployment = summary.model, summary.deployment
    alias = "champion" if summary.promoted else "challenger"
    head = (f"`models:/{model.name}@{alias}` (version {model.version}; MLflow pyfunc, `depthfinder predict`) "
            "serves the **torch** form")
    if deployment is None:
        return head + "."
    metric = deployment.metric
    served = deployment.variant("torch-pruned") if deployment.bundle else deployment.variant("torch")
    if deployment.bundle and deployment.pruning is not None:
        head += f" with its vocabulary pruned ({deployment.pruning.text()})"
    confidence = summary.rule.confidence if summary.rule is not None else None
    head += f": test {metric} {_with_interval(served, metric)}, {served.size_mb:.2f} MiB"
    others = [v for v in deployment.variants if v.name not in ("torch", "torch-pruned") and v.shipped]
    tail = f" ([low, high]: {confidence:.0%} bootstrap interval on the test rows)" if confidence else ""
    if not others:
        return f"{head}; no other form ships{tail}."
    files = ", ".join(f"{FORM_NAMES[v.name]} (test {metric} {_with_interval(v, metric)}, {v.size_mb:.2f} MiB"
                      f"{', pruned vocabulary' if v.pruned else ''})" for v in others)
    return (f"{head}. Shipped beside it as files the pyfunc does not serve: {files}, written by `depthfinder export "
            f"--format onnx` with the tokenizer.json they take{tail}.")


def _with_interval(variant, metric: str) -> str:
    """`0.912 [0.884, 0.938]`, or `0.912` by means only."""
    value = f"{variant.metrics[metric]:.3f}"
    if variant.metric_low is None:
        return value
    return f"{value} [{variant.metric_low:.3f}, {variant.metric_high:.3f}]"


def _verdicts(rule: Decision) -> str:
    """**Each depth against the best**: every other depth's difference and the rule's verdict on it, as the plot
    marks it (both read DepthScore.verdict); "" when there was one depth."""
    others = [s for s in rule.scores if (s.family, s.depth) != (rule.best_family, rule.best_depth)]
    if not others:
        return ""
    how = f"; {rule.evidence}" if rule.evidence else ""
    rows = "validation and out-of-fold" if rule.out_of_fold_rows else "validation"
    return (f"**Each depth against the best, {rule.best_label}** ({rows} {rule.metric}, {rule.tolerance:g} "
            f"tolerance{how}). {depth_verdicts(rule, others)}.")


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith(".") else f"{text}."


def _scores(summary: RunSummary) -> str:
    """The chosen depth's validation and test scores."""
    chosen = [c for c in summary.candidates if c.usable and c.depth == summary.selected_depth
              and c.family == summary.rule.selected_family]
    rows = ["| metric | validation | test |", "|---|---:|---:|"]
    metrics = ENTITY_METRICS if summary.rule.metric in ENTITY_METRICS else ("macro_f1", "balanced_accuracy", "accuracy")
    for metric in metrics:
        values = [c.metrics.get(metric) for c in chosen[:1]] + [c.test_metrics.get(metric) for c in chosen[:1]]
        rows.append(f"| {metric} | " + " | ".join("-" if v is None else f"{v:.3f}" for v in values) + " |")
    return "**Scores of the chosen depth.**\n\n" + "\n".join(rows)


def family_curves(summary: RunSummary) -> str:
    """Every family's curve (each checkpoint's): validation / test metric and FLOPs per example at each depth it
    finished; a depth pruned or untried shows its status."""
    metric = summary.rule.metric
    depths = sorted({c.depth for c in summary.candidates if c.status != "screened"})
    rows = ["| family | " + " | ".join(f"depth {d}" for d in depths) + " |", "|---|" + "---:|" * len(depths)]
    for family in dict.fromkeys(c.family for c in summary.candidates):
        cells = []
        for depth in depths:
            runs = [c for c in summary.candidates if (c.family, c.depth) == (family, depth) and c.status != "screened"]
            best = max((c for c in runs if c.usable), key=lambda c: c.metrics.get(metric, 0), default=None)
            if best is None:
                cells.append(runs[0].status if runs else "")
                continue
            flops = best.cost.flops_per_example / 1e6 if best.cost and best.cost.flops_per_example else None
            cells.append(f"{best.metrics.get(metric, 0):.3f} / {best.test_metrics.get(metric, 0):.3f}"
                         + (f" ({flops:.3g} MFLOPs)" if flops else ""))
        rows.append(f"| {family} | " + " | ".join(cells) + " |")
    return f"**Every family's curve** ({metric}, validation / test; FLOPs per example).\n\n" + "\n".join(rows)


def _hashes(fingerprint: dict[str, str]) -> str:
    names = {"data_hash": "data", "table_hash": "table", "pretrained": "checkpoint", "config_hash": "settings",
             "code_version": "code"}
    return "**Decided by.** " + ", ".join(f"{label} `{fingerprint[key]}`" for key, label in names.items()
                                          if key in fingerprint) + "."


def _tags_words(summary: RunSummary) -> bool:
    """Whether the version is a model of token labels (it answers with each word's tags)."""
    return TAGS_COLUMN in summary.model.outputs


def _loading(summary: RunSummary) -> str:
    """How to load it: pyfunc, depthfinder, and its other forms where it has them."""
    uri = f"models:/{summary.model.name}/{summary.model.version}"
    example = ", ".join(f'"{column}": ["..."]' for column in summary.model.inputs)
    example, pair = "{" + example + "}", ' --pair "..."' if "pair" in summary.model.inputs else ""
    lines = [
        "**Load it.**",
        "",
        "```python",
        "import mlflow, pandas as pd",
        f'model = mlflow.pyfunc.load_model("{uri}")  # or models:/{summary.model.name}@champion',
        f'model.predict(pd.DataFrame({example}))  # {", ".join(summary.model.outputs)}',
        "```",
        "",
        f'`depthfinder predict --model {uri} --text "..."{pair}`',
    ]
    deployment = summary.deployment
    if deployment is not None and deployment.hf_folder:
        pipeline = ('"token-classification", model="DIR", aggregation_strategy="first"' if _tags_words(summary)
                    else '"text-classification", model="DIR"')
        lines += ["", f"Hugging Face folder: `depthfinder export --model {uri} --to DIR --format hf`, then "
                  f"`transformers.pipeline({pipeline})`."]
    elif summary.model.family not in (None, "scratch"):  # a checkpoint pooled into a linear head: this is its form
        lines += ["", f"sentence-transformers folder: `depthfinder export --model {uri} --to DIR --format "
                  'sentence-transformers`, then `SentenceTransformer("DIR").encode(texts)`: class logits, in the '
                  "order of DIR/labels.json."]
    if deployment is not None and deployment.shipped_files():
        lines += ["", f"ONNX: `depthfinder export --model {uri} --to DIR --format onnx`, then "
                  '`onnxruntime.InferenceSession("DIR/model-int8.onnx")` (inputs input_ids, attention_mask).']
    return "\n".join(lines)


# The flag that drops the rows a blocking check flagged, where there is one (expectations.audit.config's drop).
DROP_FLAGS = {"cross_split_duplicates": "--drop-leaks", "cross_split_near_duplicates": "--drop-leaks",
              "conflicting_labels": "--drop-conflicts", "empty_text": "--drop-empty"}


def stopped_note(summary: RunSummary, source: str) -> str:
    """The MLflow description of a night that stopped before training (`source`: the data file or dataset): what
    stopped it, by which measure, and what a person does next."""
    if summary.audit is None:  # the comparison with the champion stopped it
        changes = summary.changes
        stops = [check for check in changes.checks if not check.success and check.severity == "error"]
        rows = [[check.name, cell(check.headline), cell(changes.thresholds.get(check.name, "-"))] for check in stops]
        look = ("the rows it flagged: `changes/foreign_rows.csv` on this run (also the Prefect artifact "
                "`foreign-rows`), each with its file line, text and label" if any(c.name == "foreign_rows"
                                                                                 for c in stops)
                else "the measures and their evidence in `changes/what_changed.json` (the Prefect artifact "
                "`what-changed`)")
        return "\n\n".join([
            f"# Stopped before training: what changed since version {changes.champion_version}",
            f"**Why.** {_sentence(changes.policy.reason)}",
            "**The measure that stopped it.**\n\n" + markdown_table(["measure", "figure", "threshold"], rows),
            f"**Next.** Look at {look}. If they belong to this task, rerun with `--force` (the flow's `force` "
            f"parameter): the night trains on them and is marked forced. If they do not, drop them from {source} "
            "and rerun.",
        ]) + "\n"
    audit = summary.audit
    blocking = [check for check in audit.checks if check.name in audit.blocked_by]
    drops = sorted({DROP_FLAGS[c.name] for c in blocking if c.name in DROP_FLAGS})
    return "\n\n".join([
        "# Stopped before training: the audit blocks it",
        f"**Why.** the audit {audit.verdict} training: {', '.join(c.name for c in blocking)}.",
        "**The checks that blocked it.**\n\n"
        + markdown_table(["check", "figure"], [[check.name, cell(check.headline)] for check in blocking]),
        "**Next.** Look at the rows they flagged: `audit/flagged_rows.csv` on this run (also the Prefect artifact "
        f"`flagged-rows`), each with its file line, text, label and likely label. Fix them in {source}"
        + (f", or drop them with {' / '.join(drops)}" if drops else "") + ", and rerun.",
    ]) + "\n"



def _unjudged_verdict(tried: TriedDepth, form: str, mb: float, limit: float | None, over: str) -> str:
    """A form of a depth the rule left out before the test split's gate: over the limit, or left out by the check on
    the validation rows (under a size limit each form is checked there first)."""
    if tried.passed_mb and form not in tried.passed_mb:
        return ("within" if limit is not None and mb <= limit else "over the limit") + (
            ", left out by the check on the validation rows")
    return over if limit is None or mb > limit else "within"


def unmet_note(summary: RunSummary) -> str:
    """The MLflow description and Prefect artifact of a night whose size limit no form met: the verdict, every form
    tried (size, test score against the full model, shipped by the gate or not), and what a person does next."""
    unmet = summary.unmet
    rows = []
    for tried in unmet.tried:
        if tried.deployment is None:
            over = " and ".join(tried.over) or "over the limit"
            rows += [[tried.depth, form, f"{mb:.2f}", "-", "-", _unjudged_verdict(tried, form, mb, unmet.limit_mb,
                                                                                 over)]
                     for form, mb in tried.sizes_mb.items()] or [[tried.depth, "-", "-", "-", "-", over]]
            continue
        metric = tried.deployment.metric
        for variant in tried.deployment.variants:
            rows.append([tried.depth, variant.name, f"{variant.size_mb:.2f}", f"{variant.metrics[metric]:.3f}",
                         variant.vs_torch.text() if variant.vs_torch is not None else "-",
                         ("over the limit" if variant.size_mb > unmet.limit_mb else "within")
                         + ("" if variant.shipped else ", refused by the gate")])
    metric = next((t.deployment.metric for t in unmet.tried if t.deployment is not None), "score")
    return "\n\n".join([
        f"# No depth within {unmet.limits}: nothing registered",
        f"**Why.** {_sentence(unmet.sentence())}",
        "**Every form tried.**\n\n" + markdown_table(
            ["depth", "form", "MiB", f"test {metric}", "vs the full model", "verdict"], rows),
        "**Next.** Raise the limit (`--max-size-mb`, `--max-latency-ms`, `--max-params`), or the deployment margin "
        "(`sweep.deployment_margin`) where a form within the size limit was refused by the gate; or sweep shallower "
        "depths.",
    ]) + "\n"
