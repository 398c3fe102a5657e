"""The screenshots of docs/operations.md, from real Prefect and MLflow servers in headless Chromium.

    nice -n 5 python -m bench.screenshots [--stack HOME] [--out docs/img]

Brings up the team stack (runtime.stack: PostgreSQL, MLflow and Prefect servers with their UIs, a worker, Dask)
in HOME (default: a fresh folder under /tmp, brought down after; an existing stack there is reused), deploys
`nightly-retrain`, and runs nights of `depthfinder run --skip-minor` against it on the real
`uci_sentiment_sentences.csv` (`DEPTHFINDER_DATA`, default data/), shuffled once (its sources come in
file order, PITFALLS.md):
  1. 1,200 rows: version 1, champion;
  2. 2,000 rows (800 added): a retrain, version 2;
  3. the same file again: skipped;
  4. + 300 `sms_spam.csv` messages labelled `0`: stopped before training (foreign rows);
  5. the same with `--force`: trained past the stop.
Then it opens each page in headless Chromium (Selenium, tests/stack/browser.py), waits for its content and saves
the PNGs (the stopped and the forced night's flow run, what-changed, foreign-rows, the runs lists and the versions
table among them). About 12 minutes on a 2-core machine. A night that ends otherwise than expected is said in a
WARNING line, and the pages that need what it did not leave are left as they are.

`--nights DIR` with the `--stack` of an earlier run shoots that run's pages again (its nights.json) without
running the nights.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

from depthfinder.runtime.services import bin_path
from depthfinder.runtime.stack import Ports, Stack, down, up
from tests.stack.browser import (
    CLOSE_ASSISTANT,
    TO_VERSIONS,
    headless,
    sign_in_to_mlflow,
    sign_in_to_prefect,
    wait_for_text,
)
from tests.stack.conftest import api, free_port

ROOT = Path(__file__).resolve().parents[1]

DATA = Path(os.environ.get("DEPTHFINDER_DATA", ROOT / "data"))  # docs/benchmarks.md, as bench.common
MODEL = "reviews"
# The runs list shows the audit's subflow runs beside the nights unless told not to; the five nights then fit on the
# screen once the chart above them is scrolled past (after the list has re-rendered).
HIDE_SUBFLOWS = ("const toggle = document.querySelector('.runs__subflows-toggle [role=switch]');"
                 "if (toggle && toggle.getAttribute('aria-checked') !== 'true') toggle.click();"
                 "setTimeout(() => document.querySelector('.runs__subflows-toggle').scrollIntoView({block: 'start'}),"
                 " 1500);")
# The exit code each night should end with: 1 for the night the comparison stops.
EXPECTED = {"first": 0, "grown": 0, "same": 0, "stopped": 1, "forced": 0}
SETTINGS = {"sweep": {"depths": [1, 2, 4]}, "train": {"max_epochs": 6, "patience": 3},
            "registry": {"experiment": MODEL, "model_name": MODEL}}


def nights(folder: Path) -> list[tuple[str, Path, list[str]]]:
    """(name, data file, extra flags) of each night, the files written to `folder`."""
    whole = pd.read_csv(DATA / "uci_sentiment_sentences.csv", dtype=str).sample(frac=1, random_state=0)
    foreign = pd.read_csv(DATA / "sms_spam.csv", dtype=str).sample(n=300, random_state=0).assign(label="0")
    files = {"first": whole.iloc[:1200], "grown": whole.iloc[:2000],
             "foreign": pd.concat([whole.iloc[:2000], foreign])}
    for name, table in files.items():
        table.to_csv(folder / f"{name}.csv", index=False)
    return [("first", folder / "first.csv", []), ("grown", folder / "grown.csv", []),
            ("same", folder / "grown.csv", []), ("stopped", folder / "foreign.csv", []),
            ("forced", folder / "foreign.csv", ["--force"])]


def run_nights(stack: Stack, folder: Path) -> dict[str, dict]:
    """Each night run against the stack: its exit code, summary (when written) and Prefect flow run."""
    config = folder / "run.yaml"
    stack_sections = yaml.safe_load((stack.home / "stack.yaml").read_text())
    for section, values in SETTINGS.items():
        stack_sections[section] = {**stack_sections.get(section, {}), **values}
    stack_sections["registry"]["workdir"] = str(folder / "work")  # absolute: the Dask workers run elsewhere
    config.write_text(json.dumps(stack_sections))
    env = {**os.environ, **stack.environment()}
    done: dict[str, dict] = {}
    for name, data, flags in nights(folder):
        before = {run["id"] for run in flow_runs(stack)}
        summary = folder / f"{name}.json"
        started = time.monotonic()
        finished = subprocess.run([bin_path("depthfinder"), "run", "--config", str(config), "--data", str(data),
                                   "--skip-minor", "--summary-json", str(summary), *flags], env=env, cwd=folder,
                                  capture_output=True, text=True, timeout=1800)
        (folder / f"{name}.log").write_text(finished.stdout + finished.stderr)
        # The night's own flow run: the audit runs as its subflow, a flow run of its own with a parent task run.
        new = [run for run in flow_runs(stack) if run["id"] not in before and not run.get("parent_task_run_id")]
        done[name] = {"code": finished.returncode, "flow_run": new[0] if new else None,
                      "summary": json.loads(summary.read_text()) if summary.is_file() else None}
        print(f"night {name}: exit {finished.returncode} in {time.monotonic() - started:.0f} s, "
              f"{new[0]['name'] if new else 'no flow run'}", flush=True)
        if finished.returncode != EXPECTED[name]:
            last = (finished.stdout + finished.stderr).strip().splitlines()[-1:] or [""]
            print(f"WARNING night {name}: exit {finished.returncode}, not {EXPECTED[name]}: {last[0][:400]}",
                  flush=True)
    (folder / "nights.json").write_text(json.dumps(done))
    return done


def flow_runs(stack: Stack) -> list[dict]:
    """The flow runs on the server, newest first."""
    return api(stack, "POST", "/flow_runs/filter", {"limit": 50, "sort": "EXPECTED_START_TIME_DESC"})


def artifact(stack: Stack, flow_run: dict, key: str) -> dict:
    """A flow run's artifact by key."""
    (found,) = api(stack, "POST", "/artifacts/filter", {"artifacts": {
        "key": {"any_": [key]}, "flow_run_id": {"any_": [flow_run["id"]]}}})
    return found


def deploy(stack: Stack) -> dict:
    """nightly-retrain deployed to the stack's pool, as tests/stack does; the deployment."""
    env = {**os.environ, **stack.environment()}
    subprocess.run([bin_path("prefect"), "--no-prompt", "deploy", "--name", "nightly-retrain"], cwd=ROOT, env=env,
                   check=True, capture_output=True, timeout=300)
    return api(stack, "GET", "/deployments/name/retrain/nightly-retrain")


def shoot(driver, url: str, path: Path, *texts: str, settle: float = 3.0, script: str = "") -> None:
    """Open `url`, wait until it shows `texts`, run `script` (close a panel, fold a section), let plots and lazy
    parts render, save the PNG."""
    driver.get(url)
    try:
        wait_for_text(driver, *texts, seconds=90)
    except AssertionError as error:  # saved all the same, to be looked at: the page is not what was expected
        print(f"WARNING {path.name}: {str(error)[:300]}", flush=True)
    if script:
        driver.execute_script(script)
    time.sleep(settle)
    driver.save_screenshot(str(path))
    print(f"saved {path}", flush=True)


def prefect_pages(driver, stack: Stack, done: dict[str, dict], deployment: dict, out: Path) -> None:
    """The Prefect UI's pages of the nights."""
    ui = stack.prefect_api.removesuffix("/api")
    sign_in_to_prefect(driver, ui, stack.credentials()["PREFECT_API_AUTH_STRING"])
    grown, stopped, forced = (done[name]["flow_run"] for name in ("grown", "stopped", "forced"))
    shoot(driver, f"{ui}/runs/flow-run/{grown['id']}", out / "prefect-flow-run.png", grown["name"], "Completed")
    for key, png in (("audit-report", "prefect-audit-artifact"), ("depth-decision", "prefect-decision-artifact")):
        shoot(driver, f"{ui}/artifacts/artifact/{artifact(stack, grown, key)['id']}", out / f"{png}.png", key)
    shoot(driver, f"{ui}/runs", out / "prefect-runs-skipped.png", "Skipped", "Stopped", forced["name"],
          script=HIDE_SUBFLOWS)
    shoot(driver, f"{ui}/runs/flow-run/{stopped['id']}", out / "prefect-stopped-run.png", stopped["name"], "Stopped")
    if done["forced"]["code"] == EXPECTED["forced"]:  # a forced night that failed is not what its page should show
        shoot(driver, f"{ui}/runs/flow-run/{forced['id']}", out / "prefect-forced-run.png", forced["name"], "forced")
    else:
        print("WARNING the forced night failed: prefect-forced-run.png not retaken", flush=True)
    # what-changed is published before anything trains: the forced night's is there whatever became of the night.
    shoot(driver, f"{ui}/artifacts/artifact/{artifact(stack, forced, 'what-changed')['id']}",
          out / "prefect-what-changed.png", "what-changed", "forced past stop")
    shoot(driver, f"{ui}/artifacts/artifact/{artifact(stack, stopped, 'foreign-rows')['id']}",
          out / "prefect-suspect-rows.png", "foreign-rows", "label")
    shoot(driver, f"{ui}/deployments/deployment/{deployment['id']}/run", out / "prefect-deployment-form.png",
          "nightly-retrain", "Parameters")




def mlflow_pages(driver, stack: Stack, done: dict[str, dict], out: Path) -> None:
    """The MLflow UI's pages of the nights."""
    from mlflow import MlflowClient

    credentials = stack.credentials()
    sign_in_to_mlflow(driver, credentials["MLFLOW_TRACKING_USERNAME"], credentials["MLFLOW_TRACKING_PASSWORD"])
    client = MlflowClient(tracking_uri=stack.mlflow_uri)
    experiment = client.get_experiment_by_name(MODEL).experiment_id
    grown = done["grown"]["summary"]["mlflow_run_id"]
    runs = f"{stack.mlflow_uri}/#/experiments/{experiment}/runs"
    shoot(driver, runs, out / "mlflow-runs.png", client.get_run(grown).info.run_name, "stopped ·", "forced ·",
          script=CLOSE_ASSISTANT)
    shoot(driver, f"{runs}/{grown}", out / "mlflow-parent-run.png", client.get_run(grown).info.run_name, "Parameters",
          script=CLOSE_ASSISTANT)
    if done["forced"]["code"] != EXPECTED["forced"]:  # no version 3 as the pages describe it
        print("WARNING the forced night failed: mlflow-forced-run.png and mlflow-model-aliases.png not retaken",
              flush=True)
        return
    forced = done["forced"]["summary"]["mlflow_run_id"]
    shoot(driver, f"{runs}/{forced}", out / "mlflow-forced-run.png", client.get_run(forced).info.run_name, "forced",
          script=CLOSE_ASSISTANT)
    shoot(driver, f"{stack.mlflow_uri}/#/models/{MODEL}", out / "mlflow-model-aliases.png", "champion", "Version 3",
          "forced past stop", script=CLOSE_ASSISTANT + TO_VERSIONS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", type=Path, help="the stack's folder, left up (default: a fresh one, brought down "
                                                   "after)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument("--nights", type=Path, help="the nights' folder of an earlier run on the same --stack: shoot "
                                                    "its pages again without running the nights")
    args = parser.parse_args(argv)
    if args.nights and not args.stack:
        parser.error("--nights needs the --stack its nights ran on")
    home = args.stack or Path(tempfile.mkdtemp(prefix="depthfinder-screens-"))
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o755)  # the postgres user the database runs as (as root) must reach it
    stack = Stack.load(home, Ports(mlflow=free_port(), prefect=free_port(), dask=free_port()))
    work = args.nights or Path(tempfile.mkdtemp(prefix="depthfinder-nights-"))
    try:
        up(stack)
        os.environ.update(stack.environment())
        if args.nights:
            deployment = api(stack, "GET", "/deployments/name/retrain/nightly-retrain")
            done = json.loads((work / "nights.json").read_text())
        else:
            deployment = deploy(stack)
            done = run_nights(stack, work)
        args.out.mkdir(parents=True, exist_ok=True)
        with headless() as driver:
            prefect_pages(driver, stack, done, deployment, args.out)
            mlflow_pages(driver, stack, done, args.out)
    finally:
        if args.stack is None:
            down(stack)
            shutil.rmtree(home, ignore_errors=True)
        print(f"nights' files and logs kept in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
