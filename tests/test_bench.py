"""bench/ is a package run as `python -m bench.<name>`: its scripts share bench.common and import each other through
the package, never by putting a folder on sys.path."""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
SCRIPTS = sorted(path for path in BENCH.glob("*.py") if path.name != "__init__.py")


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return ({alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
            | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module})


def test_the_benchmarks_import_each_other_through_the_package() -> None:
    names = {path.stem for path in SCRIPTS}
    bare = {f"{path.name}: {module}" for path in SCRIPTS for module in _imported_modules(path)
            if module.split(".")[0] in names}
    assert len(SCRIPTS) > 20 and not bare, bare


def test_no_benchmark_puts_a_folder_on_sys_path() -> None:
    assert not [path.name for path in SCRIPTS if "sys.path" in path.read_text(encoding="utf-8")]


def test_the_shared_helpers_import_without_the_benchmarks_that_use_them() -> None:
    import bench.common

    assert bench.common.DATA.name and callable(bench.common.run_depthfinder) and callable(bench.common.print_table)


def test_same_message_pairs_a_first_half_with_its_own_second_half_or_another_messages() -> None:
    from bench.pair_depth import halves_of

    texts = [" ".join(f"m{i}w{j}" for j in range(12)) for i in range(45)]  # every half its message's own
    pairs = halves_of(texts, 30)
    assert (pairs["label"].value_counts() == 15).all()
    joined = pairs["text"] + " " + pairs["pair"]
    assert joined[pairs["label"] == "same"].isin(texts).all()  # a message, whole again
    assert not joined[pairs["label"] == "different"].isin(texts).any()
    halves = [*pairs["text"], *pairs["pair"]]
    assert len(set(halves)) == len(halves)  # each message in one pair
