"""The `depthfinder` command line: run, audit, predict, deploy, datasets, unlock.

Exit codes: 0 success; 1 the audit blocked training, what changed stopped the night, or a run failed;
2 bad input or usage; 130 / 143 stopped by SIGINT / SIGTERM. Errors are one line on stderr; a fault's line names
the log that holds its traces (flows/faults.py); heavy libraries are imported only by the command that needs them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel

from encoder.config import Family, ModelConfig
from encoder.tracking.credentials import hide_credentials, redact, redact_log_records
from flows.config import RegistryConfig, RunConfig, SweepConfig, check_model_name, first_error, load_run_config
from flows.deploy import NIGHTLY_CRON
from flows.faults import FAULTS, cause_of, one_line
from flows.signals import EXIT_CODES, stop_on_signals

# Nothing phones home, and the libraries' start-up chatter stays out of the terminal
# (the Prefect temporary server's telemetry heartbeat also races its own SQLite writes).
OFFLINE_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "GX_ANALYTICS_ENABLED": "false",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    "MLFLOW_LOGGING_LEVEL": "WARNING",
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    # MLflow's "View run ... at <tracking URI>" lines: the URI may carry a password, and the summary says it all.
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
}


# --drop-KIND flags: what each drops (the kinds of AuditConfig.drop).
DROP_FLAGS = {
    "conflicts": "rows whose text also appears with another label",
    "empty": "rows whose text has no letter or digit",
    "leaks": "val/test rows whose text or a near-copy is in an earlier split",
}


class UsageError(ValueError):
    """Bad input or usage: exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not usage + message
        raise UsageError(f"{self.prog}: {message}")


def _choices(model: type[BaseModel], field: str) -> list[str]:
    """The values a Literal setting allows, from the config's own type."""
    return list(get_args(model.model_fields[field].annotation))


def _depths(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--depths takes comma-separated integers like 1,2,4,6, got {text!r}"
        ) from None


def _families(text: str) -> list[str]:
    allowed = get_args(Family)
    families = [part.strip() for part in text.split(",") if part.strip()]
    if not families or any(family not in allowed for family in families):
        raise argparse.ArgumentTypeError(f"--families takes a comma-separated list of {', '.join(allowed)}, "
                                         f"got {text!r}")
    return families


def _add_data_options(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--data", type=Path, help="CSV, Parquet or JSONL file")
    source.add_argument("--dataset", help="built-in dataset (see `depthfinder datasets`)")
    parser.add_argument("--text-col", help="text column (default: text)")
    parser.add_argument("--label-col", help="label column (default: label)")
    parser.add_argument("--split-col", help="column with train/val/test (default: made by depthfinder)")
    parser.add_argument(
        "--config", type=Path, help="YAML file with sections data, audit, changes, model, train, sweep, registry"
    )
    parser.add_argument("--strict", action="store_true", default=None, help="audit warnings block training too")
    for kind, what in DROP_FLAGS.items():
        parser.add_argument(f"--drop-{kind}", action="store_true", help=f"drop {what} before the audit (counted)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="depthfinder", description="How deep should your Transformer encoder be?")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("run", help="audit the data, sweep depth, register the chosen model")
    _add_data_options(run)
    run.add_argument("--depths", type=_depths, help="candidate depths of every family, e.g. 1,2,4,6")
    run.add_argument(
        "--pretrained", help="a pretrained encoder to truncate: a Hugging Face folder or hub id (BERT, RoBERTa, XLM-R, "
        "DistilBERT, DeBERTa-v3, ELECTRA, ModernBERT, ...)"
    )
    run.add_argument("--pretrained-pooling", choices=_choices(ModelConfig, "pretrained_pooling"),
                     help="how a pretrained candidate classifies: mean, cls, or head (the type's own head: the model "
                     "is also a Hugging Face folder); default: mean")
    run.add_argument(
        "--families", type=_families,
        help="families to sweep and choose among, e.g. scratch,pretrained (default: pretrained with --pretrained)",
    )
    run.add_argument("--max-epochs", type=int, help="upper bound on epochs per depth")
    run.add_argument("--metric", choices=_choices(SweepConfig, "metric"), help="selection metric")
    run.add_argument("--tolerance", type=float, help="quality a cheaper depth may give up")
    run.add_argument(
        "--confidence", type=float,
        help="confidence of the paired bootstrap a cheaper depth must pass to be within tolerance (default: 0.9)",
    )
    run.add_argument(
        "--extend-unconverged", action=argparse.BooleanOptionalAction,
        help="give candidates still improving at the end of their budget more epochs before deciding "
        "(default: on in the nightly deployment, off here)",
    )
    run.add_argument(
        "--check-lr", action="store_true", default=None,
        help="first train the shallowest and deepest depth briefly at 3 peak learning rates and report whether the "
        "best rate moves with depth",
    )
    run.add_argument("--seeds", type=_depths, help="seeds per depth, e.g. 1,2,3 (the rule uses their mean)")
    run.add_argument("--rule", choices=_choices(SweepConfig, "rule"), help="how to choose among depths")
    run.add_argument(
        "--cost",
        choices=_choices(SweepConfig, "cost"),
        help="cost the rule minimises (default: flops_per_example)",
    )
    run.add_argument("--strategy", choices=_choices(SweepConfig, "strategy"),
                     help="how depths are learned: grid (one fine-tune each) or search (every depth 1..L screened by "
                     "one fine-tune, then a few confirmed; default: grid)")
    run.add_argument(
        "--halving", choices=_choices(SweepConfig, "halving"),
        help="successive halving over depths (auto: on with 4+ depths)",
    )
    run.add_argument("--max-latency-ms", type=float, help="hard limit on p50 latency at batch 1")
    run.add_argument("--max-params", type=int, help="hard limit on the parameter count")
    run.add_argument("--task-runner", choices=_choices(SweepConfig, "task_runner"), help="where candidates train")
    run.add_argument("--workers", type=int, help="candidates trained at once")
    run.add_argument("--dask-address", help="scheduler address of an existing Dask cluster")
    run.add_argument("--experiment", help="MLflow experiment name")
    run.add_argument("--model-name", help="registered model name")
    run.add_argument("--tracking-uri", help="MLflow tracking URI (default: sqlite:///mlflow.db)")
    run.add_argument("--workdir", type=Path, help="folder for prepared data and checkpoints")
    run.add_argument("--summary-json", type=Path, help="write what the run decided to this file")
    run.add_argument(
        "--skip-minor", action=argparse.BooleanOptionalAction,
        help="skip the retrain when no change since the champion reaches a retrain threshold "
        "(default: on in the nightly deployment, off here)",
    )
    run.add_argument(
        "--force", action="store_true",
        help="retrain whatever the comparison with the champion says: the same data and settings, or a stop",
    )
    run.set_defaults(handler=_run)

    audit = commands.add_parser("audit", help="audit a labelled table without training")
    _add_data_options(audit)
    audit.add_argument("--report-json", type=Path, help="write the audit report to this file")
    audit.add_argument("--data-docs", type=Path, help="build the Great Expectations Data Docs (HTML) in this folder")
    audit.add_argument("--workdir", type=Path, help="folder for the prepared data")
    audit.set_defaults(handler=_audit)

    predict = commands.add_parser("predict", help="label texts with a registered model")
    predict.add_argument("--model", required=True, help="model URI, e.g. models:/depthfinder@champion")
    texts = predict.add_mutually_exclusive_group(required=True)
    texts.add_argument("--text", action="append", help="a text to label (repeatable)")
    texts.add_argument("--data", type=Path, help="file whose text column to label")
    predict.add_argument("--text-col", default="text", help="text column of --data (default: text)")
    predict.add_argument("--tracking-uri", default="sqlite:///mlflow.db", help="MLflow tracking URI")
    predict.set_defaults(handler=_predict)

    export = commands.add_parser("export", help="write the files of a registered model to a folder")
    export.add_argument("--model", required=True, help="model URI, e.g. models:/depthfinder@champion")
    export.add_argument("--to", type=Path, required=True, help="folder to write the files into (new, or empty)")
    export.add_argument("--format", choices=list(EXPORT_FORMATS), default="hf",
                        help="hf: the Hugging Face folder (pretrained, head pooling); sentence-transformers: the "
                        "sentence-transformers folder (pretrained, mean or first-token pooling); onnx: the ONNX "
                        "variants that shipped and their measurements; bundle: depthfinder's own (default: hf)")
    export.add_argument("--tracking-uri", default="sqlite:///mlflow.db", help="MLflow tracking URI")
    export.set_defaults(handler=_export)

    deploy = commands.add_parser(
        "deploy", help="serve the nightly retrain (and the audit, on demand) from this machine; needs a Prefect server"
    )
    _add_data_options(deploy)
    deploy.add_argument("--cron", default=NIGHTLY_CRON, help=f"cron schedule of the retrain (default: {NIGHTLY_CRON})")
    deploy.add_argument("--timezone", default="UTC", help="IANA time zone of the schedule (default: UTC)")
    deploy.set_defaults(handler=_deploy)

    datasets = commands.add_parser("datasets", help="list the built-in datasets")
    datasets.set_defaults(handler=_datasets)

    unlock = commands.add_parser(
        "unlock", help="free the retrain lock of a model that a dead run of an older depthfinder left taken"
    )
    unlock.add_argument("--model-name", default=RegistryConfig().model_name, help="registered model name")
    unlock.add_argument("--workdir", type=Path, default=RegistryConfig().workdir, help="the runs' work folder")
    unlock.set_defaults(handler=_unlock)
    _add_history_commands(commands)
    return parser


def _add_history_commands(commands: argparse._SubParsersAction) -> None:
    history = commands.add_parser("history", help="every move of a model's aliases; which version was champion when")
    history.add_argument("--at", type=_moment, help="say which version was champion at this time, e.g. "
                         "2026-11-24T02:00 (UTC unless an offset is given)")
    rollback = commands.add_parser("rollback", help="move champion back to previous-champion (recorded as a move)")
    rollback.add_argument("--reason", default="by hand", help="why, for the history (default: by hand)")
    for command, handler in ((history, _history), (rollback, _rollback)):
        command.add_argument("--model", "--model-name", dest="model_name", default=RegistryConfig().model_name,
                             help="registered model name")
        command.add_argument("--tracking-uri", default="sqlite:///mlflow.db", help="MLflow tracking URI")
        command.set_defaults(handler=handler)
    rollback.add_argument("--workdir", type=Path, default=RegistryConfig().workdir,
                          help="the retrains' work folder (its lock keeps a rollback and a promotion apart)")


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time such as 2026-11-24T02:00") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _overrides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """CLI flags as config sections; flags not given are left to the YAML file or the defaults."""
    get = lambda name: getattr(args, name, None)  # noqa: E731
    return {
        "data": {
            "path": get("data"),
            "dataset": get("dataset"),
            "text_col": get("text_col"),
            "label_col": get("label_col"),
            "split_col": get("split_col"),
        },
        "audit": {"strict": get("strict"), "drop": [kind for kind in DROP_FLAGS if get(f"drop_{kind}")] or None},
        "changes": {"skip_minor": get("skip_minor")},
        "model": {"pretrained": get("pretrained"), "pretrained_pooling": get("pretrained_pooling")},
        "train": {"max_epochs": get("max_epochs")},
        "sweep": {
            name: get(name)
            for name in (
                "depths",
                "families",
                "seeds",
                "rule",
                "metric",
                "tolerance",
                "confidence",
                "extend_unconverged",
                "check_lr",
                "cost",
                "strategy",
                "halving",
                "max_latency_ms",
                "max_params",
                "task_runner",
                "workers",
                "dask_address",
            )
        },
        "registry": {
            "tracking_uri": get("tracking_uri"),
            "experiment": get("experiment"),
            "model_name": get("model_name"),
            "workdir": get("workdir"),
        },
    }


def _load_config(args: argparse.Namespace) -> RunConfig:
    """Validate the config and the input table before any run starts (bad input: exit 2)."""
    from expectations.table.load import load_table

    config = load_run_config(args.config, _overrides(args))
    registry = config.registry
    config = config.model_copy(update={"registry": registry.model_copy(
        update={"tracking_uri": hide_credentials(registry.tracking_uri)})})
    load_table(config.data)
    return config


def _write_json(path: Path | None, payload: dict) -> None:
    """Write `payload` to `path` whole or not at all."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
        partial.replace(path)


def _run(args: argparse.Namespace) -> int:
    from flows.preflight import check_run
    from flows.report import format_summary
    from flows.server import prefect_api

    config = _load_config(args)
    check_run(config, outputs=[args.summary_json])
    from flows.retrain import retrain

    FAULTS.withhold(config.registry.workdir)
    with prefect_api(FAULTS.server_output()):
        state = retrain(**dict(config), force=args.force, return_state=True)
    from flows.summary import RunSummary

    summary = state.result(raise_on_failure=False)
    if not isinstance(summary, RunSummary):
        cause = cause_of(state.message, summary, config, args.summary_json)
        print(f"depthfinder: the run failed: {cause}; {FAULTS.write(_error(summary))}", file=sys.stderr)
        return 1
    _write_json(args.summary_json, summary.to_dict())
    print(format_summary(summary))
    _report_withheld()
    return 0 if state.is_completed() else 1


def _error(result: object) -> BaseException | None:
    return result if isinstance(result, BaseException) else None


def _report_withheld() -> None:
    """A command that ended well but logged errors on the way (a retried write, a failed candidate) says where."""
    if FAULTS.withheld:
        print(f"depthfinder: {FAULTS.withheld} error(s) were logged on the way; {FAULTS.write()}", file=sys.stderr)


def _audit(args: argparse.Namespace) -> int:
    from expectations.audit.report import AuditReport, audit_lines
    from flows.preflight import check_prefect_api, check_writable
    from flows.server import prefect_api

    config = _load_config(args)
    if args.report_json is not None:
        check_writable(args.report_json, "output file")
    for folder, what in ((args.data_docs, "Data Docs folder"), (config.registry.workdir, "work folder")):
        if folder is not None:
            check_writable(folder, what, folder=True)
    check_prefect_api()
    from flows.audit import audit_data

    FAULTS.withhold(config.registry.workdir)
    with prefect_api(FAULTS.server_output()):
        state = audit_data(config.data, config.audit, config.registry.workdir, args.data_docs, return_state=True)
    report = state.result(raise_on_failure=False)
    if not isinstance(report, AuditReport):
        cause = cause_of(state.message, report, config, args.report_json)
        print(f"depthfinder: the audit failed: {cause}; {FAULTS.write(_error(report))}", file=sys.stderr)
        return 1
    _write_json(args.report_json, report.to_dict())
    print(f"Audit: {'passed' if report.success else 'failed'}", *audit_lines(report), sep="\n")
    _report_withheld()
    return 0 if state.is_completed() else 1


def _predict(args: argparse.Namespace) -> int:
    from encoder.serving import predictions_frame
    from encoder.tracking.loading import open_classifier
    from encoder.tracking.runs import use_store
    from flows.preflight import check_tracking_store

    texts = args.text or _read_texts(args.data, args.text_col)
    if empty := [number for number, text in enumerate(texts, start=1) if not text.strip()]:
        shown = ", ".join(map(str, empty[:5]))
        raise UsageError(f"text {shown} of {len(texts)} is empty; a label of no text means nothing")
    _check_store_exists(args.tracking_uri)
    check_tracking_store(args.tracking_uri)
    FAULTS.withhold()
    use_store(args.tracking_uri)
    try:
        classifier = open_classifier(args.model)
    except ValueError as exc:
        raise UsageError(f"{exc} (tracking URI {args.tracking_uri})") from None
    predictions = predictions_frame(classifier, texts)
    if args.text:
        print(*predictions["label"], sep="\n")
    else:
        print(predictions.assign(text=texts).to_csv(index=False), end="")
    return 0


def _check_store_exists(tracking_uri: str) -> None:
    """A SQLite store that a command only reads must exist (MLflow would create an empty one)."""
    from encoder.tracking.runs import SQLITE
    from flows.preflight import check_store_uri

    check_store_uri(tracking_uri)
    database = tracking_uri.removeprefix(SQLITE)
    if tracking_uri.startswith(SQLITE) and not Path(database).is_file():
        raise UsageError(f"no MLflow database at {database}; run `depthfinder run` first or pass --tracking-uri")


# Each export format: the artifact of a depthfinder model that holds it (the sentence-transformers folder is written
# from the bundle, so every version has it that can), and what to say when it has none.
SENTENCE_TRANSFORMERS = "sentence-transformers"
EXPORT_FORMATS = {
    "hf": ("hf", "no Hugging Face folder: only a pretrained model trained with model.pretrained_pooling head is one; "
           "one pooled by mean or first token (the default) is a sentence-transformers folder"),
    SENTENCE_TRANSFORMERS: ("bundle", "no bundle"),
    "onnx": ("onnx", "no ONNX variants: it was registered without onnxruntime, or before depthfinder made them"),
    "bundle": ("bundle", "no bundle"),
}


def _export(args: argparse.Namespace) -> int:
    from mlflow.exceptions import MlflowException

    from encoder.tracking.loading import vouch
    from encoder.tracking.runs import use_store
    from flows.preflight import check_tracking_store, check_writable

    if args.to.exists() and (not args.to.is_dir() or any(args.to.iterdir())):
        raise UsageError(f"--to {args.to} exists and is not an empty folder")
    check_writable(args.to, "export folder", folder=True)
    _check_store_exists(args.tracking_uri)
    check_tracking_store(args.tracking_uri)
    FAULTS.withhold()
    use_store(args.tracking_uri)
    try:
        artifacts = vouch(args.model)
    except ValueError as exc:
        raise UsageError(f"{exc} (tracking URI {args.tracking_uri})") from None
    artifact, missing = EXPORT_FORMATS[args.format]
    if artifact not in artifacts:
        others = ", ".join(name for name in EXPORT_FORMATS if name != args.format)
        raise UsageError(f"{args.model} has {missing} (--format {others})")
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    created = not args.to.exists()
    args.to.mkdir(parents=True, exist_ok=True)
    partial = args.to / ".partial"
    partial.mkdir(exist_ok=True)
    try:
        fetched = Path(get_artifact_repository(args.model).download_artifacts(artifacts[artifact], str(partial)))
        if args.format == SENTENCE_TRANSFORMERS:
            fetched = _sentence_transformers_folder(fetched, partial / SENTENCE_TRANSFORMERS)
        for path in fetched.iterdir():
            path.rename(args.to / path.name)
    except (MlflowException, OSError, ValueError) as exc:
        shutil.rmtree(args.to if created else partial, ignore_errors=True)  # whole or not at all
        if isinstance(exc, ValueError):  # the model is not one that has this form
            raise UsageError(f"{args.model} has no {args.format} form: {exc}") from None
        raise UsageError(f"cannot fetch {artifact} of {args.model}: {exc}") from None
    shutil.rmtree(partial, ignore_errors=True)
    names = ", ".join(sorted(path.name for path in args.to.iterdir()))
    print(f"Wrote the {args.format} files of {args.model} to {args.to}: {names}")
    return 0


def _sentence_transformers_folder(bundle: Path, folder: Path) -> Path:
    """The sentence-transformers folder of a fetched bundle, written in `folder`; ValueError for a model that has
    none (encoder.bundle)."""
    from encoder.bundle import save_sentence_transformers_folder
    from encoder.serving import load_bundle

    model = load_bundle(bundle)
    return save_sentence_transformers_folder(folder, model.network, model.tokenizer, model.labels)


def _read_texts(path: Path, text_col: str) -> list[str]:
    from expectations.table.load import read_table

    table = read_table(path)
    if text_col not in table.columns:
        raise UsageError(f"{path} has no column {text_col!r}; columns are {', '.join(map(str, table.columns))}")
    return table[text_col].fillna("").astype(str).tolist()


def _deploy(args: argparse.Namespace) -> int:
    from flows.deploy import serve, server_problem

    config = _load_config(args)
    _check_timezone(args.timezone)
    if problem := server_problem():
        raise UsageError(problem)
    serve(config, args.cron, args.timezone)
    return 0


def _check_timezone(name: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"--timezone {name!r} is not an IANA time zone such as UTC or Europe/Berlin") from None


def _datasets(args: argparse.Namespace) -> int:
    from expectations.table.datasets import list_datasets

    for dataset in list_datasets():
        print(f"{dataset.name:<20} {dataset.description}")
    return 0


def _unlock(args: argparse.Namespace) -> int:
    from flows.lock import clear_server_slots, describe_holder, is_locked, lock_path, read_holder
    from flows.preflight import check_prefect_api
    from flows.server import prefect_api

    check_model_name(args.model_name)
    _check_folder(args.workdir)
    path = lock_path(args.workdir, args.model_name)
    if is_locked(path):
        raise UsageError(
            f"a retrain of {args.model_name!r} is running ({describe_holder(read_holder(path))}); it frees the lock "
            "when it ends, however it ends: stop it (Ctrl-C or kill) instead"
        )
    check_prefect_api()
    with prefect_api():
        taken = clear_server_slots(args.model_name)
    print(f"The retrain lock of {args.model_name!r} is free ({path} has no live holder; "
          f"{taken} slot(s) of the Prefect limit retrain-{args.model_name} freed).")
    return 0


def _check_folder(workdir: Path) -> None:
    if workdir.exists() and not workdir.is_dir():
        raise UsageError(f"--workdir {workdir} is not a folder")


def _registry_client(args: argparse.Namespace):
    """A client of the registry holding `args.model_name`, or UsageError when there is no such model."""
    from mlflow.exceptions import MlflowException

    from encoder.tracking.runs import client_of
    from flows.preflight import check_tracking_store

    check_model_name(args.model_name)
    _check_store_exists(args.tracking_uri)
    check_tracking_store(args.tracking_uri)
    FAULTS.withhold()
    client = client_of(args.tracking_uri)
    try:
        client.get_registered_model(args.model_name)
    except MlflowException:
        raise UsageError(f"no registered model {args.model_name!r} at {args.tracking_uri}") from None
    return client


def _history(args: argparse.Namespace) -> int:
    from encoder.tracking.history import CHAMPION, alias_history, history_problems, holder_at

    client = _registry_client(args)
    moves = alias_history(client, args.model_name)
    if args.at is not None:
        move = holder_at(moves, CHAMPION, args.at)
        if move is None:
            print(f"{args.model_name} had no champion at {args.at:%Y-%m-%d %H:%M %Z}.")
        else:
            print(f"Version {move.version} of {args.model_name} was champion at {args.at:%Y-%m-%d %H:%M %Z} "
                  f"(since {move.time:%Y-%m-%d %H:%M:%S %Z}, {_mover(move)}: {move.reason}).")
        return 0
    rows = [[str(m.seq), f"{m.time:%Y-%m-%d %H:%M:%S}", m.alias, m.version, m.previous or "-", _mover(m), m.reason]
            for m in moves]
    header = ["#", "time (UTC)", "alias", "version", "was", "moved by", "reason"]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])
    for problem in history_problems(client, args.model_name, moves):
        print(f"warning: {problem} (a process was stopped between moving it and recording the move)")
    return 0


def _mover(move) -> str:
    return f"run {move.run_id[:8]}" if move.run_id else move.by


def _rollback(args: argparse.Namespace) -> int:
    from encoder.tracking.history import roll_back
    from flows.lock import LockBusy, holding_now

    _check_folder(args.workdir)
    client = _registry_client(args)
    try:
        with holding_now(args.model_name, args.workdir):
            champion, previous = roll_back(client, args.model_name, args.reason)
    except LockBusy as busy:
        print(f"depthfinder: not rolled back: {busy}; it may be moving champion now. Run `depthfinder history` "
              "when it ends and roll back then if still wanted.", file=sys.stderr)
        return 1
    print(f"Champion of {args.model_name} is version {champion.version} again (was {champion.previous}); "
          f"previous-champion is version {previous.version}.")
    return 0


def main(argv: list[str] | None = None) -> int:
    from encoder.interrupt import STOP

    for key, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(key, value)
    redact_log_records()
    try:
        with stop_on_signals():
            args = build_parser().parse_args(argv)
            # Where a fault's log goes: the work folder given, else the default (run and audit: the config's).
            FAULTS.folder = Path(getattr(args, "workdir", None) or RegistryConfig().workdir)
            if getattr(args, "tracking_uri", None):
                args.tracking_uri = hide_credentials(args.tracking_uri)
            code = args.handler(args)
            if STOP.requested:  # a stop that the flow took as its own end (a failed or cancelled state)
                raise KeyboardInterrupt
            return code
    except BaseException as exc:
        if STOP.requested or isinstance(exc, KeyboardInterrupt):  # a stop, whatever it surfaced as
            print(_interrupted(STOP.signal_name or "SIGINT", STOP.interrupted), file=sys.stderr)
            code = EXIT_CODES.get(STOP.signal_name, 130)
            STOP.clear()
            return code
        if isinstance(exc, SystemExit):  # --help
            raise
        if isinstance(exc, ValueError):  # UsageError, or raised at the boundary: config, input, preflight
            message = redact(_usage_line(exc))
            print(message if message.startswith("depthfinder") else f"depthfinder: {message}", file=sys.stderr)
            return 2
        # A fault (a disk, a server, a bug): its cause in one line, its trace in the log.
        print(f"depthfinder: {cause_of(None, exc, None)}; {FAULTS.write(exc)}", file=sys.stderr)
        return 1
    finally:
        FAULTS.close()


def _usage_line(error: ValueError) -> str:
    """Bad input in one line: a pydantic error's first problem, or the message's first line."""
    from pydantic import ValidationError

    if isinstance(error, ValidationError):
        return first_error(error, None)
    return one_line(str(error))


def _interrupted(signal_name: str, what: str | None) -> str:
    """The one line that says what a signal stopped and how to go on."""
    return (
        f"depthfinder: stopped by {signal_name}" + (f" while {what}" if what else "")
        + "; nothing was registered after it; finished candidates and the last finished epoch of the others are "
        "kept: run the same command again to continue"
    )


if __name__ == "__main__":
    sys.exit(main())
