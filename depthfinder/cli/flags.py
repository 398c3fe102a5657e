"""Flags made from the config: a setting that is a flag says so on its field, and the parser is built from the fields.

A field declares its flag in `json_schema_extra`:

    tolerance: float = Field(0.01, ge=0, description="...", json_schema_extra={"flag": "--tolerance"})

The flag's help is the field's description, its default the field's default, its type and choices the field's type:
a number, a path or a text as itself, a Literal as its choices, a list of numbers or of names comma-separated, a list
of texts one per flag (`--text a --text b`), a boolean a switch (`--[no-]name` when it may be null), a time in ISO
form. Two more keys: `one_of` names a group of which at most one flag may be given (`--data` or `--dataset`;
`group_required` when one must be), and `each` makes a list of names one switch per name, with its help
(`"flag": "--drop-{}"`: --drop-conflicts, --drop-empty, --drop-leaks).

A flag of a run's settings (one of RunConfig's sections) has no default of its own: given, it overrides the value
of the YAML file; not given, it leaves the file's value or the field's default (`settings_given`). A flag of a
command's own options (cli/options.py) takes its field's default.
"""

from __future__ import annotations

import argparse
import types
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

# What a field's `json_schema_extra` may say about its flag.
KEYS = {"flag", "one_of", "group_required", "each"}


class UsageError(ValueError):
    """Bad input or usage: exit code 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not usage + message
        raise UsageError(f"{self.prog}: {message}")


@dataclass(frozen=True)
class Flag:
    """One field's flag, as the field declares it; `section` is the RunConfig section whose settings it overrides
    (None: a command's own option, which takes the field's default)."""

    name: str
    field: FieldInfo
    spellings: tuple[str, ...]
    section: str | None = None

    @property
    def declared(self) -> dict[str, Any]:
        return declaration(self.field) or {}

    @property
    def dest(self) -> str:
        return f"{self.section}.{self.name}" if self.section else self.name

    @property
    def switches(self) -> dict[str, str]:
        """An `each` flag's switches: spelling -> the name it adds."""
        return {self.spellings[0].format(name): name for name in self.declared.get("each", {})}

    def texts(self) -> list[str]:
        """How the flag is written in the docs: `--tolerance`, `--[no-]skip-minor`, or each switch."""
        if self.switches:
            return list(self.switches)
        if self._keywords().get("action") is argparse.BooleanOptionalAction:
            return [self.spellings[0].replace("--", "--[no-]", 1)]
        return [max(self.spellings, key=len)]

    def add_to(self, parser: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup) -> None:
        if not self.switches:
            parser.add_argument(*self.spellings, **self._keywords())
            return
        order = list(self.switches.values())
        for spelling, name in self.switches.items():
            parser.add_argument(spelling, dest=self.dest, action=_AddName, const=name, order=order,
                                default=argparse.SUPPRESS, help=_escaped(self.declared["each"][name]))

    def _keywords(self) -> dict[str, Any]:
        """The keywords of `add_argument` that the field's type, default and description make."""
        annotation, optional = _bare(self.field.annotation)
        keywords: dict[str, Any] = {"dest": self.dest, "help": self._help()}
        if self.field.is_required():
            keywords["required"] = True
        else:
            keywords["default"] = self.default if self.section is None else argparse.SUPPRESS
        if annotation is bool:
            return keywords | {"action": argparse.BooleanOptionalAction if optional else "store_true"}
        keywords["metavar"] = max(self.spellings, key=len).lstrip("-").replace("-", "_").upper()
        if get_origin(annotation) is Literal:
            return keywords | {"choices": list(get_args(annotation)), "metavar": None}
        if get_origin(annotation) is list:
            item, _ = _bare(get_args(annotation)[0])
            if item is str:
                return keywords | {"action": "append"}
            return keywords | {"type": _comma_separated(self.spellings[0], item)}
        return keywords | {"type": _moment if annotation is datetime else annotation}

    @property
    def default(self) -> Any:
        return self.field.get_default(call_default_factory=True)

    def _help(self) -> str:
        default = self.default
        shown = "" if default in (None, False, []) or self.field.is_required() else f" (default: {_shown(default)})"
        return _escaped((self.field.description or "") + shown)


def declaration(field: FieldInfo) -> dict[str, Any] | None:
    """What a field declares about its flag (None: it has none; it is set in the YAML file only).

    Raises:
        TypeError: the declaration has a key that is not one of KEYS.
    """
    extra = field.json_schema_extra
    if not isinstance(extra, dict) or "flag" not in extra:
        return None
    if unknown := set(extra) - KEYS:
        raise TypeError(f"a flag declaration takes {', '.join(sorted(KEYS))}, not {', '.join(sorted(unknown))}")
    return extra


def flags_of(model: type[BaseModel], *names: str, section: str | None = None,
             spelled: dict[str, tuple[str, ...]] | None = None, parts: bool = False) -> list[Flag]:
    """The flags that `model`'s fields declare (only those of `names`, when given), in field order; `spelled` gives a
    command's own spellings of some (`--model` beside `--model-name`); with `parts`, those of a field that is a model
    of its own too, in the section named by both (`sweep.crossfit`: `--crossfit` sets sweep.crossfit.mode)."""
    flags = []
    for name, field in model.model_fields.items():
        if parts and isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            flags += flags_of(field.annotation, *names, section=f"{section}.{name}", spelled=spelled, parts=True)
            continue
        declared = declaration(field)
        if declared is not None and (not names or name in names):
            spellings = (spelled or {}).get(name, (declared["flag"],))
            flags.append(Flag(name, field, tuple(spellings), section))
    return flags


def add_flags(parser: argparse.ArgumentParser, flags: Iterable[Flag]) -> None:
    """Add `flags` to `parser`, those of one `one_of` group as a mutually exclusive group."""
    groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
    for flag in flags:
        group = flag.declared.get("one_of")
        if group is not None and group not in groups:
            groups[group] = parser.add_mutually_exclusive_group(required=flag.declared.get("group_required", False))
        flag.add_to(groups[group] if group is not None else parser)


def settings_given(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The settings the command line gave, by section (`sweep.depths` -> {"sweep": {"depths": ...}}, a part's within
    it); a flag that was not given is absent, so the YAML file's value or the default stands."""
    given: dict[str, dict[str, Any]] = {}
    for dest, value in vars(args).items():
        *sections, name = dest.split(".")
        if sections:
            settings = given
            for section in sections:  # a part's setting: sweep.crossfit.mode -> {"sweep": {"crossfit": {"mode": ..}}}
                settings = settings.setdefault(section, {})
            settings[name] = value
    return given


class _AddName(argparse.Action):
    """A switch of an `each` flag: adds its name to the setting's list, which keeps the order of the names."""

    def __init__(self, option_strings: list[str], dest: str, const: str, order: list[str], **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, const=const, **kwargs)
        self.order = order

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        chosen = {*(getattr(namespace, self.dest, None) or ()), self.const}
        setattr(namespace, self.dest, [name for name in self.order if name in chosen])


def _bare(annotation: Any) -> tuple[Any, bool]:
    """The type under Annotated and `| None`, and whether it may be None."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        options = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(options) == 1:
            return _bare(options[0])[0], True
    return annotation, False


def _comma_separated(flag: str, item: Any) -> Any:
    """The parser of a flag that takes a comma-separated list of `item`s (numbers, or the names of a Literal)."""
    names = get_args(item) if get_origin(item) is Literal else None

    def parse(text: str) -> list:
        parts = [part.strip() for part in text.split(",") if part.strip()]
        if names is not None:
            if not parts or any(part not in names for part in parts):
                raise argparse.ArgumentTypeError(
                    f"{flag} takes a comma-separated list of {', '.join(names)}, got {text!r}")
            return parts
        try:
            return [item(part) for part in parts]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{flag} takes comma-separated integers like 1,2,4,6, got {text!r}") from None

    return parse


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time such as 2026-11-24T02:00") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _shown(value: Any) -> str:
    """A default as the command line writes it: `1,2` for a list."""
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return str(value) if not isinstance(value, Path) else value.as_posix()


def _escaped(text: str) -> str:
    return text.replace("%", "%%")  # argparse formats help with %
