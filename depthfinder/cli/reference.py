"""The configuration and report references, generated from the pydantic models so the docs cannot drift.

docs/configuration.md documents every setting (from the config models and the flags they declare); docs/reports.md
every field of `summary.json` and of the audit report (from the typed records). `python -m
cli.reference` prints both; `--write docs` (`make docs`) writes them. tests/cli/test_reference.py
fails when a committed document is stale.
"""

from __future__ import annotations

import argparse
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import to_jsonable_python

from depthfinder.cli.commands import commands
from depthfinder.flows.config import DATA_SOURCES, RunConfig

REGENERATE = "make docs (or: python -m depthfinder.cli.reference --write docs)"

# Sections where exactly one of some settings must be given (DataConfig._one_source).
ONE_OF = {"data": DATA_SOURCES}

SCALARS = {int: "int", float: "float", str: "string", bool: "boolean", Path: "path"}
SIGNS = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}
LENGTHS = {"min_length": "at least", "max_length": "at most"}
MIRRORED = {"≥": "≤", ">": "<"}  # a lower bound written before the type: `0 < float`

EXAMPLE_YAML = """\
# run.yaml — use with: depthfinder run --config run.yaml (flags on the command line win)
data:
  dataset: reviews-negation  # or `path: reviews.csv`; exactly one of the two
  dataset_rows: 2000
audit:
  drop: [conflicts, leaks]
model:
  d_model: 128
  n_heads: 4
train:
  max_epochs: 10
sweep:
  depths: [1, 2, 4, 6]
  seeds: [1, 2]
  rule: tolerance
  tolerance: 0.01
  cost: latency_ms_p50
registry:
  experiment: depthfinder-nightly
"""


def build_reference() -> str:
    """The whole Markdown document: an introduction, one table per section, an example YAML file.

    Returns:
        The document, ending in a newline.

    Raises:
        ValueError: when EXAMPLE_YAML no longer validates against RunConfig.
    """
    _check_example()
    flags = cli_flags()
    sections = list(_sections(RunConfig))
    lines = [
        "<!-- Generated from the pydantic models by `make docs`; do not edit by hand. -->",
        "",
        "# Configuration reference",
        "",
        "A run reads its settings from a YAML file given with `depthfinder run --config FILE` — one mapping per "
        "section below — and from the flags of `depthfinder run`. A flag beats the file and the file beats the "
        "defaults. Everything is validated before the run starts: an unknown setting or a value out of range "
        "stops it with a message naming the setting (exit code 2). A part of a section (`sweep.crossfit`, "
        "`sweep.distill`, `sweep.pool`, `sweep.runner`) is a mapping of its own, or a bare value that sets its first "
        "setting (`crossfit: off`); the flat keys an earlier version wrote (`crossfit_folds: 3`, `task_runner: dask`) "
        "are read in their parts, with a line on stderr saying so.",
        "",
        "Sections: " + ", ".join(f"[`{name}`](#{name.replace('.', '')})" for name, _, _ in sections) + ".",
    ]
    for name, model, required in sections:
        lines += ["", *_section(name, model, required, flags)]
    lines += ["", "## Example", "", "```yaml", EXAMPLE_YAML.rstrip("\n"), "```"]
    return "\n".join(lines) + "\n"


def cli_flags() -> dict[tuple[str, str], list[str]]:
    """Flags of `depthfinder run` by the (section, setting) they set: the declarations its parser is built from."""
    run = next(command for command in commands() if command.name == "run")
    return {(flag.section, flag.name): flag.texts() for flag in run.flags if flag.section is not None}


def _sections(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, type[BaseModel], bool]]:
    """(dotted name, model, required) of every nested settings model, depth first."""
    for name, field in model.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            dotted = f"{prefix}{name}"
            yield dotted, field.annotation, field.is_required()
            yield from _sections(field.annotation, f"{dotted}.")


def _section(name: str, model: type[BaseModel], required: bool, flags: dict[tuple[str, str], list[str]]) -> list[str]:
    """Heading, summary and table of one section."""
    summary = (model.__doc__ or "").strip().split("\n")[0]
    notes = [summary, f"Model: `{model.__module__}.{model.__name__}`."]
    if required:
        notes.append("This section is required.")
    one_of = [field for field in model.model_fields if field in ONE_OF.get(name, ())]
    if one_of:
        source_flags = [flag for field in one_of for flag in flags.get((name, field), [])]
        replaced = f"; a flag ({_either(source_flags, 'or')}) replaces the file's" if source_flags else ""
        notes.append(f"Give exactly one of {_either(one_of, 'and')}{replaced}.")
    rows = [
        "| setting | type | default | flag | description |",
        "| --- | --- | --- | --- | --- |",
    ]
    for field_name, field in model.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            continue  # a nested section, with a table of its own
        alternatives = [other for other in one_of if other != field_name] if field_name in one_of else []
        default = _default(field, alternatives)
        flag = ", ".join(f"`{f}`" for f in flags.get((name, field_name), [])) or "—"
        cells = [f"`{field_name}`", describe_type(field), default, flag, field.description or ""]
        rows.append("| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |")
    return [f"## {name}", "", " ".join(note for note in notes if note), "", *rows]


def _either(names: list[str], joiner: str) -> str:
    quoted = [f"`{name}`" for name in names]
    return f" {joiner} ".join([", ".join(quoted[:-1]), quoted[-1]]) if len(quoted) > 1 else quoted[0]


def _default(field: FieldInfo, alternatives: list[str]) -> str:
    """The default as YAML writes it; `required` (or required unless an alternative is given) otherwise."""
    if field.is_required():
        return "required"
    if alternatives:
        return f"required unless {_either(alternatives, 'or')} is given"
    return f"`{yaml_scalar(field.get_default(call_default_factory=True))}`"


def yaml_scalar(value: Any) -> str:
    """`value` as YAML writes it on one line: `null`, `[1, 2]`, `'on'`, `.depthfinder`."""
    text = yaml.safe_dump(to_jsonable_python(value), default_flow_style=True, width=10_000, allow_unicode=True)
    return text.strip().removesuffix("...").strip()


def describe_type(field: FieldInfo) -> str:
    """A readable type with its bounds: `int ≥ 1`, `0 ≤ float < 1`, `one of: a, b`, `list of int, at least 1`."""
    bounds = {
        name: getattr(item, name)
        for item in field.metadata
        for name in ("ge", "gt", "le", "lt", "min_length", "max_length")
        if getattr(item, name, None) is not None
    }
    return _type_name(field.annotation, bounds)


def _type_name(annotation: Any, bounds: dict[str, Any]) -> str:
    origin = get_origin(annotation)
    if origin is Annotated:  # e.g. StrictInt: the type it constrains
        return _type_name(get_args(annotation)[0], bounds)
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(annotation) if arg is not type(None)]
        text = " or ".join(_type_name(option, bounds) for option in options)
        return f"{text} or none" if len(options) < len(get_args(annotation)) else text
    if origin is Literal:
        return "one of: " + ", ".join(yaml_scalar(choice) for choice in get_args(annotation))
    if origin in (list, tuple, set, frozenset):
        item = get_args(annotation)[0] if get_args(annotation) else Any
        each = "list, each" if get_origin(item) is Literal else "list of"
        text = f"{each} {_type_name(item, {})}"
        length = [f"{word} {bounds[key]}" for key, word in LENGTHS.items() if key in bounds]
        return ", ".join([text, *length])
    name = SCALARS.get(annotation, getattr(annotation, "__name__", str(annotation)))
    lower = [(SIGNS[key], bounds[key]) for key in ("ge", "gt") if key in bounds]
    upper = [(SIGNS[key], bounds[key]) for key in ("le", "lt") if key in bounds]
    if lower and upper:  # `0 ≤ float < 1`
        (low_sign, low), (high_sign, high) = lower[0], upper[0]
        return f"{low} {MIRRORED[low_sign]} {name} {high_sign} {high}"
    return " ".join([name, *(f"{sign} {value}" for sign, value in lower + upper)])


def _check_example() -> None:
    try:
        RunConfig.model_validate(yaml.safe_load(EXAMPLE_YAML))
    except ValidationError as exc:
        raise ValueError(f"EXAMPLE_YAML in cli/reference.py no longer validates: {exc}") from None


def build_records_reference() -> str:
    """docs/reports.md: one table per record of `summary.json` and of the audit report, fields in order."""
    from depthfinder.expectations.audit.report import AuditReport
    from depthfinder.flows.summary import RunSummary

    lines = [
        "<!-- Generated from the typed records by `make docs`; do not edit by hand. -->",
        "",
        "# What a run writes",
        "",
        "`depthfinder run --summary-json PATH` writes a `RunSummary` (also logged to the MLflow parent run as "
        "`summary.json`); `depthfinder audit --report-json PATH` writes an `AuditReport` (also logged as "
        "`audit/report.json`). Both are frozen records in the code: `RunSummary.from_dict(json.load(file))` reads "
        "a summary back, and `choose_depth(summary.candidates, summary.rule.settings)` replays its "
        "decision. A field that does not apply is `null`.",
    ]
    for model in _records(RunSummary, AuditReport):
        lines += ["", *_record_section(model)]
    return "\n".join(lines) + "\n"


def _records(*roots: type[BaseModel]) -> list[type[BaseModel]]:
    """The root records and every record nested in them, each once, in the order they are met."""
    found: list[type[BaseModel]] = []

    def visit(model: type[BaseModel]) -> None:
        if model in found:
            return
        found.append(model)
        for _, annotation, _ in _written_fields(model):
            for nested in _nested_models(annotation):
                visit(nested)

    for root in roots:
        visit(root)
    return found


def _nested_models(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for argument in get_args(annotation):
        yield from _nested_models(argument)


def _record_section(model: type[BaseModel]) -> list[str]:
    summary = (model.__doc__ or "").strip().split("\n")[0]
    rows = ["| field | type | description |", "| --- | --- | --- |"]
    for name, annotation, description in _written_fields(model):
        cells = [f"`{name}`", _record_type(annotation), description or ""]
        rows.append("| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |")
    return [f"## {model.__name__}", "", f"{summary} (`{model.__module__}.{model.__name__}`)", "", *rows]


def _written_fields(model: type[BaseModel]) -> Iterator[tuple[str, Any, str | None]]:
    """(key, type, description) of each key a record's JSON form writes, in its order: the keys it derives from its
    fields (computed fields: a decision's settings), then its fields but those it excludes."""
    for name, computed in model.model_computed_fields.items():
        yield name, computed.return_type, computed.description
    for name, field in model.model_fields.items():
        if not field.exclude:
            yield name, field.annotation, field.description


def _record_type(annotation: Any) -> str:
    """A field's type for the records reference, linking nested records to their sections."""
    origin = get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    if origin is dict:
        key, value = get_args(annotation)
        return f"map of {_record_type(key)} to {_record_type(value)}"
    if origin is list:
        return f"list of {_record_type(get_args(annotation)[0])}"
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(annotation) if arg is not type(None)]
        text = " or ".join(_record_type(option) for option in options)
        return f"{text} or null" if len(options) < len(get_args(annotation)) else text
    if annotation is Any:
        return "any"
    return _type_name(annotation, {})


DOCUMENTS = {"configuration.md": build_reference, "reports.md": build_records_reference}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m depthfinder.cli.reference", description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, metavar="FOLDER", help="write the documents here instead of printing")
    args = parser.parse_args(argv)
    for name, build in DOCUMENTS.items():
        if args.write is None:
            sys.stdout.write(build())
        else:
            args.write.mkdir(parents=True, exist_ok=True)
            (args.write / name).write_text(build(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
