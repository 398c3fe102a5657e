"""Bad input: one line on stderr naming the problem, exit code 2, nothing left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from depthfinder.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


CASES = {
    "missing file": (None, ["run", "--data", "absent.csv"], "absent.csv"),
    "unknown text column": ("text,label\na,x\nb,y\n", ["run", "--data", "t.csv", "--text-col", "body"], "body"),
    "unknown label column": ("text,label\na,x\nb,y\n", ["run", "--data", "t.csv", "--label-col", "y"], "'y'"),
    "empty table": ("text,label\n", ["run", "--data", "t.csv"], "no rows"),
    "single class": ("text,label\na,x\nb,x\nc,x\n", ["run", "--data", "t.csv"], "single class"),
    "NaN labels": ("text,label\na,x\nb,\nc,y\n", ["run", "--data", "t.csv"], "label"),
    "non-UTF-8": ("text,label\nna\xefve,x\nb,y\n".encode("latin-1"), ["run", "--data", "t.csv"], "UTF-8"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", ["run", "--data", "t.csv"], "t.csv"),
    "unknown format": ("text,label\n", ["run", "--data", "t.xlsx"], "t.xlsx"),
    "unknown dataset": (None, ["run", "--dataset", "nope"], "nope"),
    "bad depths": (None, ["run", "--dataset", "topics", "--depths", "1,x"], "--depths"),
    "audit of a missing file": (None, ["audit", "--data", "absent.csv"], "absent.csv"),
    "labels that differ only in case": (
        "text,label\ngood film,Positive\nbad film,negative\nfine film,positive\n", ["run", "--data", "t.csv"],
        "labels 'Positive' and 'positive'",
    ),
    "labels that differ only in number format": (
        "text,label\ngood film,1\nbad film,0\nfine film,1.0\n", ["run", "--data", "t.csv"], "labels '1' and '1.0'"
    ),
    "duplicate header": ("text,label,text\na,x,b\nc,y,d\n", ["run", "--data", "t.csv"], "'text' appears 2 times"),
    "an unclosed quote in the header and a long row": (
        'text,"label\n' + "a" * 200_000 + ",x\n", ["run", "--data", "t.csv"], "its header: field larger than"
    ),
    "a seed numpy refuses": (None, ["run", "--dataset", "topics", "--seeds", "1,-2"], "sweep.seeds.1"),
    "a seed beyond 32 bits": ("data: {dataset: topics}\ntrain: {seed: 4294967296}\n", ["run", "--config", "c.yaml"],
                              "train.seed"),
    "an infinite learning rate": (
        "data: {dataset: topics}\ntrain: {learning_rate: .inf}\n", ["run", "--config", "c.yaml"],
        "train.learning_rate (in c.yaml): Input should be a finite number",
    ),
    "a Dask scheduler nobody answers": (
        None, ["run", "--dataset", "topics", "--task-runner", "dask", "--dask-address", "tcp://127.0.0.1:9"],
        "no Dask scheduler answers at tcp://127.0.0.1:9",
    ),
    "a database store without its driver": (
        None, ["run", "--dataset", "topics", "--tracking-uri", "mysql://u:pw@127.0.0.1/mlflow"],
        "MLflow store mysql://***@127.0.0.1/mlflow: its database driver MySQLdb is not installed",
    ),
    "a database store that does not answer": (
        None, ["run", "--dataset", "topics", "--tracking-uri", "postgresql+psycopg2://u:pw@127.0.0.1:9/mlflow"],
        "the MLflow store postgresql+psycopg2://***@127.0.0.1:9/mlflow does not answer",
    ),
    "a text column of numbers": (
        "id,label\n1,x\n2,y\n3,x\n", ["run", "--data", "t.csv", "--text-col", "id"], "holds only numbers"
    ),
    "a depth beyond any encoder": (None, ["run", "--dataset", "topics", "--depths", "1,100"], "from 1 to 64"),
    "a boolean depth": ("data: {dataset: topics}\nsweep: {depths: [true]}\n", ["run", "--config", "c.yaml"],
                        "sweep.depths"),
    "malformed YAML": (
        "data: {dataset: topics\nsweep: [1\n", ["run", "--config", "c.yaml"], "c.yaml is not valid YAML: line"
    ),
    "heads that do not divide the width": (
        "data: {dataset: topics}\nmodel: {d_model: 10, n_heads: 4}\n", ["run", "--config", "c.yaml"],
        "n_heads 4 must divide d_model 10",
    ),
    "a model name with a slash": (None, ["run", "--dataset", "topics", "--model-name", "a/b"], "model_name"),
    "an empty model name": (None, ["run", "--dataset", "topics", "--model-name", ""], "model_name"),
    "an empty experiment": (None, ["run", "--dataset", "topics", "--experiment", ""], "experiment"),
    "a tracking store under an unwritable path": (
        None, ["run", "--dataset", "topics", "--tracking-uri", "sqlite:////proc/nope/mlflow.db"], "/proc/nope"
    ),
    "a tracking server that does not answer": (
        None, ["run", "--dataset", "topics", "--tracking-uri", "http://127.0.0.1:9"], "http://127.0.0.1:9"
    ),
    "a summary that cannot be written": (
        None, ["run", "--dataset", "topics", "--summary-json", "/proc/nope/s.json"], "/proc/nope/s.json"
    ),
    "an audit report that cannot be written": (
        None, ["audit", "--dataset", "topics", "--report-json", "/proc/nope/r.json"], "/proc/nope/r.json"
    ),
    "an empty text to label": (
        None, ["predict", "--model", "models:/m@champion", "--text", ""], "text 1 of 1 is empty"
    ),
    "an in-memory tracking store, which cannot hold a registry across the run's processes": (
        None, ["run", "--dataset", "topics", "--tracking-uri", "sqlite://"], "sqlite:// is an in-memory SQLite database"
    ),
    "an in-memory store named as a file": (
        None, ["run", "--dataset", "topics", "--tracking-uri", "sqlite:///:memory:"], "in-memory SQLite database"
    ),
    "an in-memory store to read": (
        None, ["history", "--model", "m", "--tracking-uri", "sqlite://"], "in-memory SQLite database"
    ),
    "a file store": (None, ["run", "--dataset", "topics", "--tracking-uri", "mlruns"], "MLflow's file store"),
    "a store of no known kind": (
        None, ["predict", "--model", "models:/m@champion", "--text", "hi", "--tracking-uri", "nope://x"],
        "tracking URI 'nope://x' is not a store depthfinder can use",
    ),
    "a config nested 20,000 deep": (
        "data: {dataset: topics}\nsweep: {depths: " + "[" * 20_000 + "]" * 20_000 + "}\n",
        ["run", "--config", "c.yaml"], "config file c.yaml nests deeper than it can be read",
    ),
    "a config that is a folder": (None, ["run", "--config", "."], "config file . is not a file"),
    "a JSONL line nested 20,000 deep": (
        '{"text": "a", "label": "x"}\n{"text": "b", "label": "y", "meta": ' + "[" * 20_000 + "]" * 20_000 + "}\n",
        ["audit", "--data", "t.jsonl"], "t.jsonl: line 2 nests deeper than it can be read",
    ),
    "a hard limit on parameters that no candidate can meet": (
        None, ["run", "--dataset", "topics", "--max-params", "1"],
        "sweep.max_params: no candidate can have as few as 1 parameters: the smallest, depth 1, has at least",
    ),
    "a size limit that no candidate can meet": (
        None, ["run", "--dataset", "topics", "--max-size-mb", "0.001"],
        "sweep.max_size_mb: no candidate can ship in 0.001 MiB: the smallest, depth 1, weighs at least",
    ),
    "a model whose smallest candidate no machine has the memory for": (
        "data: {dataset: topics}\nmodel: {d_model: 1000000, n_heads: 4, d_ff: 4000000}\n",
        ["run", "--config", "c.yaml"], "no candidate fits in this machine's",
    ),
    "an empty checkpoint name": (None, ["run", "--dataset", "topics", "--pretrained="], "model.pretrained"),
    "a work folder that is a file, to unlock": (
        "", ["unlock", "--workdir", "w"], "--workdir w is not a folder"
    ),
    "a history of a name no model can have": (
        None, ["history", "--model", "a b/c"], "model name 'a b/c' is not one depthfinder registers"
    ),
    "a rollback of a name no model can have": (None, ["rollback", "--model", "a b/c"], "model name 'a b/c'"),
    "an unlock of a name no model can have": (None, ["unlock", "--model-name", "a b/c"], "model name 'a b/c'"),
    "pairs without their second column": (
        "text,label\na,x\nb,y\n", ["run", "--data", "t.csv", "--task", "pairs"], "no column 'pair'"),
    "a pairs dataset without the pairs task": (None, ["run", "--dataset", "same-topic"], "pass --task pairs"),
    "an unknown task": (None, ["run", "--dataset", "topics", "--task", "spans"], "--task"),
    "a tag of no scheme": ("EU U-ORG\n", ["audit", "--data", "t.conll", "--task", "tokens"], "not BIO or BIOES"),
    "fewer tags than tokens": (
        '{"tokens": ["a", "b"], "tags": ["O"]}\n', ["audit", "--data", "t.jsonl", "--task", "tokens"],
        "sentence 0 has 2 tokens but 1 tags"),
    "a CoNLL file without the tokens task": ("EU B-ORG\n", ["run", "--data", "t.conll"], "pass --task tokens"),
    "a token of two words": ('{"tokens": ["New York", "b"], "tags": ["B-LOC", "O"]}\n',
                             ["run", "--data", "t.jsonl", "--task", "tokens"], "token 0 is 'New York'; a token is one"),
    "an empty token": ('{"tokens": ["", "b"], "tags": ["O", "O"]}\n', ["run", "--data", "t.jsonl", "--task", "tokens"],
                       "sentence 0 token 0 is ''"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_exits_2_with_one_line(case: str, tmp_path: Path, monkeypatch, capsys) -> None:
    content, argv, named = CASES[case]
    monkeypatch.chdir(tmp_path)
    if content is not None:
        _write(tmp_path / argv[2], content)
    before = set(tmp_path.iterdir())

    code = main(argv)

    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert named in err
    assert "Traceback" not in err
    assert set(tmp_path.iterdir()) == before  # no mlflow.db, no .depthfinder, no summary


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has a GPU")
def test_asking_for_a_gpu_on_a_machine_without_one_exits_2_before_any_work(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text("data: {dataset: topics}\ntrain: {accelerator: gpu}\n")

    code = main(["run", "--config", "c.yaml"])

    err = capsys.readouterr().err
    assert code == 2 and "train.accelerator: gpu" in err and "no CUDA GPU" in err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["c.yaml"]


def test_predict_without_a_database_exits_2_and_creates_none(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)

    code = main(["predict", "--model", "models:/nothing@champion", "--text", "hi"])

    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "no MLflow database at mlflow.db" in err
    assert not (tmp_path / "mlflow.db").exists()


def test_predict_with_unknown_model_exits_2(tmp_path: Path, monkeypatch, capsys) -> None:
    from mlflow import MlflowClient

    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowClient(tracking_uri=uri).search_experiments()  # an empty registry
    capsys.readouterr()

    code = main(["predict", "--model", "models:/nothing@champion", "--text", "hi", "--tracking-uri", uri])

    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "models:/nothing@champion" in err


def test_sweep_flags_reach_the_config() -> None:
    from depthfinder.cli.flags import settings_given
    from depthfinder.cli.main import build_parser
    from depthfinder.flows.config import load_run_config

    args = build_parser().parse_args([
        "run", "--dataset", "topics", "--seeds", "1,2", "--rule", "pareto", "--cost", "latency_ms_p50",
        "--max-latency-ms", "2.5", "--max-params", "1000000", "--task-runner", "dask", "--workers", "2",
        "--dask-address", "tcp://127.0.0.1:8786",
    ])
    sweep = load_run_config(None, settings_given(args)).sweep

    assert (sweep.seeds, sweep.rule, sweep.cost) == ([1, 2], "pareto", "latency_ms_p50")
    assert (sweep.max_latency_ms, sweep.max_params) == (2.5, 1_000_000)
    assert (sweep.runner.kind, sweep.runner.workers, sweep.runner.dask_address) == ("dask", 2, "tcp://127.0.0.1:8786")


def test_a_run_into_a_deleted_experiment_exits_2_and_says_how_to_restore_it(tmp_path: Path, monkeypatch, capsys):
    from mlflow import MlflowClient

    monkeypatch.chdir(tmp_path)
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    client.delete_experiment(client.create_experiment("nightly"))
    capsys.readouterr()

    code = main(["run", "--dataset", "topics", "--experiment", "nightly"])

    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "MLflow experiment 'nightly' is deleted" in err and "mlflow experiments restore --experiment-id" in err
    assert not (tmp_path / ".depthfinder").exists()


@pytest.mark.parametrize(("name", "reader", "error"), [
    ("t.csv", "read_csv", MemoryError()),
    ("t.parquet", "read_parquet", __import__("pyarrow").lib.ArrowMemoryError("malloc of size 6442450944 failed")),
])
def test_a_table_too_large_for_memory_is_said_in_one_line_with_its_size(
    name: str, reader: str, error: MemoryError, tmp_path: Path, monkeypatch, capsys
) -> None:
    import pandas as pd

    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_bytes(b"x" * 2_500)

    def out_of_memory(*args, **kwargs):
        raise error

    monkeypatch.setattr(pd, reader, out_of_memory)

    code = main(["run", "--data", name])

    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{name}: the file (2.5 KB) does not fit in the memory this process may use" in err
    assert sorted(path.name for path in tmp_path.iterdir()) == [name]


def test_a_table_larger_than_the_memory_limit_is_said_in_one_line(tmp_path: Path) -> None:
    """A real limit (RLIMIT_AS) 30 MB above what the process holds, and a 40 MB table."""
    row = "a text of a few words to label,positive\n"
    (tmp_path / "big.csv").write_text("text,label\n" + row * (40 * 2**20 // len(row)))
    script = (
        "import resource, sys, psutil\n"
        "import pandas, pyarrow, depthfinder.expectations.table.load\n"
        "from depthfinder.cli.main import main\n"
        "limit = psutil.Process().memory_info().vms + 30 * 2**20\n"
        "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
        "sys.exit(main(['audit', '--data', 'big.csv']))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})

    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip() == ("depthfinder: big.csv: the file (41.9 MB) does not fit in the memory this process "
                                   "may use; give it more memory, or a sample of the table")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["big.csv"]
