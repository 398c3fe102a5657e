"""Bad input: one line on stderr naming the problem, exit code 2, nothing left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.cli import main


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
    from flows.cli import _overrides, build_parser
    from flows.config import load_run_config

    args = build_parser().parse_args([
        "run", "--dataset", "topics", "--seeds", "1,2", "--rule", "pareto", "--cost", "latency_ms_p50",
        "--max-latency-ms", "2.5", "--max-params", "1000000", "--task-runner", "dask", "--workers", "2",
        "--dask-address", "tcp://127.0.0.1:8786",
    ])
    sweep = load_run_config(None, _overrides(args)).sweep

    assert (sweep.seeds, sweep.rule, sweep.cost) == ([1, 2], "pareto", "latency_ms_p50")
    assert (sweep.max_latency_ms, sweep.max_params) == (2.5, 1_000_000)
    assert (sweep.task_runner, sweep.workers, sweep.dask_address) == ("dask", 2, "tcp://127.0.0.1:8786")


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
