"""Promotion history: every move of a registered model's aliases, kept on the registered model itself.

MLflow knows only where an alias points now. Each move (champion, challenger,
previous-champion) is recorded as a registered-model tag `depthfinder.move.<seq>` holding
the move as a line a reviewer reads in the MLflow UI's tags table and the code reads back
(`champion → version 2 (was 1), 2026-12-01 02:14:07.208311 UTC, by ci@host, run 3a10...:
promoted: ...`): alias, version, the version it left, time, the person or host, the run that
moved it and why (tags written as JSON before are still read). The history therefore lives
wherever the registry lives (SQLite, a tracking server on PostgreSQL) and needs nothing
else. Moves happen under the model's retrain lock
(runtime.lock), so sequence numbers never collide; the alias moves first and the record
follows, and `history_problems` says when a move is missing (a process killed between the
two), instead of showing a history that disagrees with the registry.
"""

from __future__ import annotations

import getpass
import json
import re
import socket
from datetime import datetime, timezone

from mlflow import MlflowClient
from pydantic import Field

from depthfinder.runtime.records import Record

CHAMPION, CHALLENGER, PREVIOUS_CHAMPION = "champion", "challenger", "previous-champion"
MOVE_PREFIX = "depthfinder.move."


class AliasMove(Record):
    """One alias of a registered model moved to a version."""

    seq: int = Field(description="Order of the move among the model's moves, from 1.")
    time: datetime = Field(description="When it moved (UTC).")
    alias: str = Field(description="champion, challenger or previous-champion.")
    version: str = Field(description="The version it points to after the move.")
    previous: str | None = Field(None, description="The version it pointed to before, if any.")
    reason: str = Field(description="Why, in a phrase.")
    run_id: str | None = Field(None, description="The MLflow run whose retrain moved it; none for a person.")
    by: str = Field(description="Who moved it: user@host.")


def move_alias(
    client: MlflowClient, model_name: str, alias: str, version: str, reason: str, run_id: str | None = None
) -> AliasMove:
    """Point `alias` at `version` and record the move. Call under the model's retrain lock."""
    registered = client.get_registered_model(model_name)
    previous = registered.aliases.get(alias)
    client.set_registered_model_alias(model_name, alias, str(version))
    seq = 1 + max((int(key.removeprefix(MOVE_PREFIX)) for key in registered.tags if key.startswith(MOVE_PREFIX)),
                  default=0)
    move = AliasMove(
        seq=seq, time=datetime.now(timezone.utc), alias=alias, version=str(version),
        previous=None if previous is None else str(previous), reason=reason, run_id=run_id,
        by=f"{getpass.getuser()}@{socket.gethostname()}",
    )
    client.set_registered_model_tag(model_name, f"{MOVE_PREFIX}{seq:06d}", move_line(move))
    return move


# A move's tag: `champion → version 2 (was 1), 2026-12-01 02:14:07.208311 UTC, by ci@host, run <id or ->: why`;
# the reason last, so whatever it says cannot break the parts before it.
MOVE_LINE = re.compile(r"(?P<alias>\S+) → version (?P<version>\S+) \(was (?P<previous>[^)]*)\), "
                       r"(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}) UTC, by (?P<by>.*?), run (?P<run_id>\S+): "
                       r"(?P<reason>.*)", re.DOTALL)
TIME = "%Y-%m-%d %H:%M:%S.%f"


def move_line(move: AliasMove) -> str:
    """The move as its tag holds it (MOVE_LINE)."""
    when = move.time.astimezone(timezone.utc)
    return (f"{move.alias} → version {move.version} (was {move.previous or 'none'}), {when:{TIME}} UTC, by {move.by}, "
            f"run {move.run_id or '-'}: {move.reason}")


def read_move(seq: int, value: str) -> AliasMove:
    """A move from its tag: a MOVE_LINE, or the JSON that earlier releases wrote."""
    if value.startswith("{"):
        return AliasMove.from_dict(json.loads(value))
    found = MOVE_LINE.fullmatch(value)
    if found is None:
        raise ValueError(f"promotion history tag {MOVE_PREFIX}{seq:06d} is not a move: {value[:80]!r}")
    parts = found.groupdict()
    return AliasMove(
        seq=seq, time=datetime.strptime(parts["time"], TIME).replace(tzinfo=timezone.utc), alias=parts["alias"],
        version=parts["version"], previous=None if parts["previous"] == "none" else parts["previous"],
        reason=parts["reason"], run_id=None if parts["run_id"] == "-" else parts["run_id"], by=parts["by"],
    )


def alias_history(client: MlflowClient, model_name: str) -> list[AliasMove]:
    """Every recorded move of the model's aliases, oldest first."""
    tags = client.get_registered_model(model_name).tags
    moves = [read_move(int(key.removeprefix(MOVE_PREFIX)), value) for key, value in tags.items()
             if key.startswith(MOVE_PREFIX)]
    return sorted(moves, key=lambda move: move.seq)


def holder_at(moves: list[AliasMove], alias: str, when: datetime) -> AliasMove | None:
    """The move that put the version holding `alias` at `when` there, or None if it held none then."""
    before = [move for move in moves if move.alias == alias and move.time <= when]
    return before[-1] if before else None


def history_problems(client: MlflowClient, model_name: str, moves: list[AliasMove]) -> list[str]:
    """Where the registry's aliases disagree with the last recorded move of each (a move left unrecorded)."""
    aliases = client.get_registered_model(model_name).aliases
    last = {move.alias: move.version for move in moves}
    return [f"{alias} points to version {version} but the last recorded move put it at "
            f"{last.get(alias, 'nothing')}" for alias, version in sorted(aliases.items())
            if alias in (CHAMPION, CHALLENGER, PREVIOUS_CHAMPION) and last.get(alias) != str(version)]


def roll_back(client: MlflowClient, model_name: str, reason: str) -> list[AliasMove]:
    """Move `champion` back to `previous-champion`, and `previous-champion` to the version it leaves.
    Call under the model's retrain lock.

    Raises:
        ValueError: when the model has no champion or no previous champion to go back to.
    """
    aliases = client.get_registered_model(model_name).aliases
    if CHAMPION not in aliases or PREVIOUS_CHAMPION not in aliases:
        missing = CHAMPION if CHAMPION not in aliases else PREVIOUS_CHAMPION
        raise ValueError(f"model {model_name!r} has no {missing}: nothing to roll back to")
    champion, previous = str(aliases[CHAMPION]), str(aliases[PREVIOUS_CHAMPION])
    return [
        move_alias(client, model_name, CHAMPION, previous, f"rollback from version {champion}: {reason}"),
        move_alias(client, model_name, PREVIOUS_CHAMPION, champion, f"rolled back: {reason}"),
    ]


def history_table(moves: list[AliasMove]) -> str:
    """The promotion history, newest first, as a Markdown table."""
    rows = ["| # | time (UTC) | alias | version | was | reason |", "|---:|---|---|---:|---:|---|"]
    for move in sorted(moves, key=lambda m: m.seq, reverse=True):
        reason = move.reason.replace("|", "\\|")
        rows.append(f"| {move.seq} | {move.time:%Y-%m-%d %H:%M} | {move.alias} | {move.version} | "
                    f"{move.previous or '-'} | {reason} |")
    return "\n".join(rows)
