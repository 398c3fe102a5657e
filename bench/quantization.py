"""Which int8 recipe keeps a small encoder's accuracy? Each form of trained models, weighed and scored on test.

For every bundle given (a trained candidate's folder, `encoder.bundle.save_bundle`: bench/student_recipe.py's
`plain-<depth>/bundle` of all-MiniLM-L6-v2, say) and its table (`table.parquet` beside the bundle's folder: `text`,
`label`, `split`; or, with `--data FILE`, the file every bundle was trained on, split as a run splits it: a
bench/edge.py work folder's `candidates/*/bundle-epochs-*`), the vocabulary is pruned to the texts the run may
read without labels (train and validation: encoder.vocabulary.vocabulary_texts), and each form is made from the
pruned model and from the full one:

- torch (float32), the reference;
- int8 as depthfinder ships it (encoder.export.quantize: weight-only, each embedding row with a scale of its own,
  every matrix by ONNX Runtime's MatMulNBits at 8 bits, activations in float);
- the same with float products (MatMulNBits accuracy level 0 instead of 4: each block's product in float, not in
  int8 where the CPU can), with a scale per 64 numbers of a column instead of 128, and with the embedding tables
  left in float (the matrices alone quantised): which of the shipped recipe's parts changes the labels;
- dynamic int8 (ONNX Runtime `quantize_dynamic`, activations quantised on the fly, per-tensor QInt8 weights, the
  embedding table quantised too);
- dynamic int8 with per-channel weights (`per_channel=True`: one scale per output row of each matrix);
- per-channel, the embedding tables left in float32 (`nodes_to_exclude` the Gather nodes): more MiB, the rows a
  broad vocabulary's rare words look up kept exact;
- and, from the full model only, the coded form depthfinder ships where the pruned vocabulary is refused
  (encoder.coded: the rows the train and validation texts never use product-quantised), as shipped and by
  per-channel dynamic int8.

Printed per bundle and form: MiB of its file, test macro-F1, the labels it changed of the full torch model's on the
validation and test texts (what widens the gate's interval), the paired difference from the full torch model with
its 90 % interval (evidence.bootstrap.paired_interval, the deployment gate's), and whether that difference is shown
within the deployment margin (0.01). Last line: `RESULT <bundle>_<form>_mib=... <bundle>_<form>_drop=...
<bundle>_<form>_changed=...`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METRIC, MARGIN, CONFIDENCE = "macro_f1", 0.01, 0.9
SHIPPED = "int8-weight-only"
# The shipped recipe's alternatives: encoder.export.quantize's keywords.
WEIGHT_ONLY = {SHIPPED: {}, f"{SHIPPED}-float-products": {"compute": 0}, f"{SHIPPED}-block-64": {"block": 64},
               f"{SHIPPED}-fp32-embeddings": {"rows": False}}
RECIPES = (*WEIGHT_ONLY, "int8", "int8-per-channel", "int8-per-channel-fp32-embeddings")


def quantized(fp32: Path, out: Path, recipe: str) -> Path:
    """`fp32` quantised by `recipe` (module docstring) into `out`."""
    if recipe in WEIGHT_ONLY:
        from depthfinder.encoder.export import quantize

        return quantize(fp32, out, **WEIGHT_ONLY[recipe])
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process


    prepared = out.with_suffix(".prepared.onnx")
    quant_pre_process(str(fp32), str(prepared), skip_symbolic_shape=True)
    gathers = [node.name for node in onnx.load(str(prepared)).graph.node if node.op_type == "Gather"]
    quantize_dynamic(str(prepared), str(out), weight_type=QuantType.QInt8, per_channel=recipe != "int8",
                     nodes_to_exclude=gathers if recipe.endswith("fp32-embeddings") else [])
    prepared.unlink()
    return out


def forms(bundle: Path, frame: object, folder: Path) -> dict[str, tuple[object, float]]:
    """Each form's classifier and MiB: torch full and pruned, and every recipe of each."""
    from depthfinder.encoder.coded import coded_network
    from depthfinder.encoder.export import OnnxNetwork, export_onnx
    from depthfinder.encoder.serving import TextClassifier, load_bundle
    from depthfinder.encoder.size import weights_mb
    from depthfinder.encoder.vocabulary import prune, vocabulary_texts

    model = load_bundle(bundle)
    pruned, tokenizer = prune(model.network, model.tokenizer, vocabulary_texts(frame))
    found = {}
    for name, network, tok in (("full", model.network, model.tokenizer), ("pruned", pruned, tokenizer)):
        found[f"torch-{name}"] = (TextClassifier(network, tok, model.labels), weights_mb(network))
        fp32 = export_onnx(network, folder / f"{name}.onnx")
        for recipe in RECIPES:
            path = quantized(fp32, folder / f"{name}-{recipe}.onnx", recipe)
            found[f"{recipe}-{name}"] = (TextClassifier(OnnxNetwork(path, network.cfg), tok, model.labels),
                                         path.stat().st_size / 2**20)
    coded, _ = coded_network(model.network, model.tokenizer, vocabulary_texts(frame))
    fp32 = export_onnx(coded, folder / "coded.onnx")
    for recipe in (*WEIGHT_ONLY, "int8-per-channel"):
        path = quantized(fp32, folder / f"coded-{recipe}.onnx", recipe)
        found[f"{recipe}-coded"] = (TextClassifier(OnnxNetwork(path, coded.cfg), model.tokenizer, model.labels),
                                    path.stat().st_size / 2**20)
    return found


def table(bundle: Path, data: Path | None) -> object:
    """The bundle's rows (`text`, `label`, `split`): `data` split as a run splits it, else its table.parquet."""
    import pandas as pd

    if data is None:
        return pd.read_parquet(bundle.parent.parent / "table.parquet", columns=["text", "label", "split"])
    from bench.edge import splits

    return pd.DataFrame([{"text": text, "label": label, "split": split}
                         for split, (texts, labels) in splits(data).items()
                         for text, label in zip(texts, labels, strict=True)])


def main(argv: list[str] | None = None) -> int:
    from depthfinder.evidence.bootstrap import paired_interval
    from depthfinder.evidence.margin import within
    from depthfinder.evidence.metrics import classification_metrics

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundles", type=Path, nargs="+", help="bundle folders, each beside ../table.parquet")
    parser.add_argument("--data", type=Path, help="the file every bundle was trained on, instead of table.parquet")
    args = parser.parse_args(argv)
    fields = []
    for bundle in args.bundles:
        name = f"{bundle.parent.parent.name}-{bundle.parent.name}"
        rows = table(bundle, args.data)
        test, val = rows[rows["split"] == "test"], rows[rows["split"] == "val"]
        texts, truths = test["text"].astype(str).tolist(), test["label"].astype(str).tolist()
        with tempfile.TemporaryDirectory() as folder:
            made = forms(bundle, rows, Path(folder))
            predicted = {form: classifier.predict(texts + val["text"].astype(str).tolist())
                         for form, (classifier, _) in made.items()}
        reference = predicted["torch-full"]
        print(f"\n{name}: {len(texts):,} test rows, {len(val):,} validation rows; test {METRIC} of each form against "
              f"the full torch model ({CONFIDENCE:.0%} paired interval), margin {MARGIN}; labels changed of the full "
              "torch model's (validation and test)")
        for form, (_, mib) in made.items():
            score = classification_metrics(truths, predicted[form][:len(texts)])[METRIC]
            gap = paired_interval(truths, predicted[form][:len(texts)], reference[:len(texts)], METRIC, CONFIDENCE)
            changed = sum(mine != theirs for mine, theirs in zip(predicted[form], reference, strict=True))
            verdict = "within" if within(gap.difference, MARGIN, gap.low) else "not shown within"
            print(f"  {form:<42} {mib:7.2f} MiB  {score:.3f}  changed {changed:3}  {gap.text()}  {verdict}")
            fields.append(f"{name}_{form}_mib={mib:.2f} {name}_{form}_drop={-gap.difference:.4f} "
                          f"{name}_{form}_changed={changed}")
    print("RESULT " + " ".join(fields))
    return 0


if __name__ == "__main__":
    sys.exit(main())
