"""The model card: what a reviewer of a registered version reads in the MLflow UI, without a terminal.

One Markdown text, written once per run and shown as the version's description, the registered model's (the
champion's card, and the promotion history as a table) and the sweep's parent run's note: the choice and why,
with its intervals and the depth curve; the audit's verdict; what changed since the champion; the promotion with
its numbers; what each deployable form scored and costs; the hashes a version is decided by; and how to load it.
"""

from __future__ import annotations

from flows.summary import RunSummary

# The plots the parent run keeps (flows.retrain.record_decision), linked through the MLflow server's artifact
# endpoint (relative, so it works under any host the UI is served from).
PLOT = "get-artifact?path=plots%2F{name}&run_uuid={run_id}"


def model_card(summary: RunSummary, fingerprint: dict[str, str]) -> str:
    """The card of the version `summary` registered."""
    model, rule = summary.model, summary.rule
    audit = summary.audit
    warnings = f" (warnings: {', '.join(audit.warnings)})" if audit.warnings else ""
    sections = [
        f"# {model.name} version {model.version}: {model.family or 'scratch'} depth {model.depth}",
        f"**Decision.** {_sentence(rule.reason)}",
        f"![quality by depth]({PLOT.format(name='metric_vs_depth.png', run_id=summary.mlflow_run_id)})",
        f"**Audit.** {'passed' if audit.success else 'failed'}{warnings}.",
        f"**Promotion.** {'promoted to champion' if summary.promoted else 'not promoted'}: {summary.promotion}.",
    ]
    if summary.changes is not None:
        sections.append(f"**What changed since version {summary.changes.champion_version}.** "
                        f"{_sentence(summary.changes.policy.reason)}")
    sections.append(_scores(summary))
    if len({c.family for c in summary.candidates}) > 1:
        sections.append(family_curves(summary))
    if summary.deployment is not None:
        sections.append(f"**Deployable forms, on the test split.** {_sentence(summary.deployment.sentence)}")
    sections += [_hashes(fingerprint), _loading(summary)]
    return "\n\n".join(sections) + "\n"


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith(".") else f"{text}."


def _scores(summary: RunSummary) -> str:
    """The chosen depth's validation and test scores."""
    chosen = [c for c in summary.candidates if c.usable and c.depth == summary.selected_depth
              and c.family == summary.rule.selected_family]
    rows = ["| metric | validation | test |", "|---|---:|---:|"]
    for metric in ("macro_f1", "balanced_accuracy", "accuracy"):
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


def _loading(summary: RunSummary) -> str:
    """How to load it: pyfunc, depthfinder, and its other forms where it has them."""
    uri = f"models:/{summary.model.name}/{summary.model.version}"
    lines = [
        "**Load it.**",
        "",
        "```python",
        "import mlflow, pandas as pd",
        f'model = mlflow.pyfunc.load_model("{uri}")  # or models:/{summary.model.name}@champion',
        'model.predict(pd.DataFrame({"text": ["..."]}))  # label, confidence, proba_<label>',
        "```",
        "",
        f'`depthfinder predict --model {uri} --text "..."`',
    ]
    deployment = summary.deployment
    if deployment is not None and deployment.hf_folder:
        lines += ["", f"Hugging Face folder: `depthfinder export --model {uri} --to DIR --format hf`, then "
                  '`transformers.pipeline("text-classification", model="DIR")`.']
    elif summary.model.family not in (None, "scratch"):  # a checkpoint pooled into a linear head: this is its form
        lines += ["", f"sentence-transformers folder: `depthfinder export --model {uri} --to DIR --format "
                  'sentence-transformers`, then `SentenceTransformer("DIR").encode(texts)`: class logits, in the '
                  "order of DIR/labels.json."]
    if deployment is not None and deployment.shipped_files():
        lines += ["", f"ONNX: `depthfinder export --model {uri} --to DIR --format onnx`, then "
                  '`onnxruntime.InferenceSession("DIR/model-int8.onnx")` (inputs input_ids, attention_mask).']
    return "\n".join(lines)
