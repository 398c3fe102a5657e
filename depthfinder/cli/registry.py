"""The commands that read or move registered models: predict, export, history, rollback, and unlock (the retrain lock).

Each reads a store that must exist (a SQLite file is never created by a command that only reads it) and names the
store when a model is not in it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from depthfinder.cli.flags import UsageError
from depthfinder.cli.options import EXPORT_FORMATS, SENTENCE_TRANSFORMERS
from depthfinder.flows.config import check_model_name
from depthfinder.runtime.faults import FAULTS

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")


def predict(args: argparse.Namespace) -> int:
    import pandas as pd

    from depthfinder.encoder.serving import PAIR_INPUTS, inputs_frame, predictions_frame
    from depthfinder.tracking.loading import open_classifier

    pairs = args.pair is not None or (args.data is not None and args.pair_col is not None)
    texts = args.text or _read_texts(args.data, args.text_col)
    seconds = args.pair or (_read_texts(args.data, args.pair_col) if pairs else [])
    if args.pair is not None and len(args.pair) != len(texts):
        raise UsageError(f"{len(texts)} --text but {len(args.pair)} --pair; a pair is one --text and one --pair")
    if empty := [number for number, text in enumerate(texts + seconds, start=1) if not text.strip()]:
        shown = ", ".join(str((number - 1) % len(texts) + 1) for number in empty[:5])
        raise UsageError(f"text {shown} of {len(texts)} is empty; a label of no text means nothing")
    _open_store(args.tracking_uri)
    classifier = _opened(open_classifier, args)
    if pairs != (classifier.inputs == PAIR_INPUTS):
        raise UsageError(f"model {args.model} reads " + ("pairs: give --pair with each --text, or --data with "
                         "--text-col and --pair-col" if not pairs else "single texts: leave out --pair and --pair-col"))
    inputs = list(zip(texts, seconds, strict=True)) if pairs else texts
    predictions = predictions_frame(classifier, inputs)
    if args.text:
        print(*_answers(predictions), sep="\n")
    else:
        print(pd.concat([_flat(predictions), inputs_frame(inputs)], axis=1).to_csv(index=False), end="")
    return 0


def _answers(predictions: pd.DataFrame) -> list[str]:
    """A line per --text: its label; for a model of token labels, a JSON object of its tags and spans."""
    from depthfinder.encoder.serving import LABEL_COLUMN

    if LABEL_COLUMN in predictions.columns:
        return predictions[LABEL_COLUMN].tolist()
    return [json.dumps(row, ensure_ascii=False) for row in predictions.to_dict(orient="records")]


def _flat(predictions: pd.DataFrame) -> pd.DataFrame:
    """The predictions as CSV cells take them: a token model's spans (a list of objects per text) as JSON."""
    from depthfinder.encoder.serving import SPANS_COLUMN

    if SPANS_COLUMN not in predictions.columns:
        return predictions
    spans = [json.dumps(spans, ensure_ascii=False) for spans in predictions[SPANS_COLUMN]]
    return predictions.assign(**{SPANS_COLUMN: spans})


def _open_store(tracking_uri: str) -> None:
    """Check the store a command reads (it exists and answers), then withhold errors for the fault log."""
    from depthfinder.flows.preflight import check_tracking_store

    _check_store_exists(tracking_uri)
    check_tracking_store(tracking_uri)
    FAULTS.withhold()


def _opened(open_model: Callable[[str], T], args: argparse.Namespace) -> T:
    """`open_model(args.model)` on the store `args.tracking_uri` names; UsageError for a model it refuses."""
    from depthfinder.tracking.runs import use_store

    use_store(args.tracking_uri)
    try:
        return open_model(args.model)
    except ValueError as exc:
        raise UsageError(f"{exc} (tracking URI {args.tracking_uri})") from None


def _check_store_exists(tracking_uri: str) -> None:
    """A SQLite store that a command only reads must exist (MLflow would create an empty one)."""
    from depthfinder.flows.preflight import check_store_uri
    from depthfinder.tracking.store import SQLITE

    check_store_uri(tracking_uri)
    database = tracking_uri.removeprefix(SQLITE)
    if tracking_uri.startswith(SQLITE) and not Path(database).is_file():
        raise UsageError(f"no MLflow database at {database}; run `depthfinder run` first or pass --tracking-uri")


def export(args: argparse.Namespace) -> int:
    from mlflow.exceptions import MlflowException

    from depthfinder.flows.preflight import check_writable
    from depthfinder.tracking.loading import vouch

    if args.to.exists() and (not args.to.is_dir() or any(args.to.iterdir())):
        raise UsageError(f"--to {args.to} exists and is not an empty folder")
    check_writable(args.to, "export folder", folder=True)
    _open_store(args.tracking_uri)
    artifacts = _opened(vouch, args)
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
    from depthfinder.encoder.bundle import save_sentence_transformers_folder
    from depthfinder.encoder.serving import load_bundle

    model = load_bundle(bundle)
    return save_sentence_transformers_folder(folder, model.network, model.tokenizer, model.labels)


def _read_texts(path: Path, text_col: str) -> list[str]:
    from depthfinder.expectations.table.load import read_table

    table = read_table(path)
    if text_col not in table.columns:
        raise UsageError(f"{path} has no column {text_col!r}; columns are {', '.join(map(str, table.columns))}")
    return table[text_col].fillna("").astype(str).tolist()


def unlock(args: argparse.Namespace) -> int:
    from depthfinder.flows.preflight import check_prefect_api
    from depthfinder.runtime.lock import clear_server_slots, describe_holder, is_locked, lock_path, read_holder
    from depthfinder.runtime.server import prefect_api

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

    from depthfinder.tracking.runs import client_of

    check_model_name(args.model_name)
    _open_store(args.tracking_uri)
    client = client_of(args.tracking_uri)
    try:
        client.get_registered_model(args.model_name)
    except MlflowException:
        raise UsageError(f"no registered model {args.model_name!r} at {args.tracking_uri}") from None
    return client


def history(args: argparse.Namespace) -> int:
    from depthfinder.tracking.history import CHAMPION, alias_history, history_problems, holder_at

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


def rollback(args: argparse.Namespace) -> int:
    from depthfinder.runtime.lock import LockBusy, holding_now
    from depthfinder.tracking.history import roll_back

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
