"""Inspecting real studies: status, show, plot, report (in headless Chromium) and export,
checked against the rows of the store."""

import collections
import csv
import io
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import emews
from emews.store import SQLiteStore

SUPPORT = Path(__file__).parent / "support"
SPACE = [{"name": "x", "type": "float", "lower": -2.0, "upper": 2.0},
         {"name": "lr", "type": "float", "lower": 1e-4, "upper": 1.0, "log": True},
         {"name": "n", "type": "int", "lower": 0, "upper": 3},
         {"name": "act", "type": "categorical", "values": ["relu", "tanh"]}]

pytestmark = pytest.mark.slow


def cli(*args, cwd=None, timeout=240):
    """``python -m emews ARGS``: the CompletedProcess."""
    env = dict(os.environ, PYTHONPATH=str(SUPPORT))
    for name in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "emews", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def run_study(directory, objective, budget, system):
    """Run a real study in ``directory``; return its experiment directory."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "space.json").write_text(json.dumps(SPACE))
    lines = ["[system]"] + [f"{k} = {json.dumps(v)}" for k, v in system.items()]
    lines += ["[study]", 'space = "space.json"', f"budget = {budget}", "seed = 3",
              f'objective = "{objective}"']
    (directory / "study.toml").write_text("\n".join(lines) + "\n")
    done = cli("run", "study.toml", cwd=directory)
    assert done.returncode == 0, done.stderr
    (expdir,) = (directory / "experiments" / "study").iterdir()
    return expdir


@pytest.fixture(scope="module")
def metrics_study(tmp_path_factory):
    """A study on a real MPI pool of 2 ranks whose model returns a history of metrics."""
    return run_study(tmp_path_factory.mktemp("metrics"), "toy_models:history_dict", 16,
                     {"procs": 2})


@pytest.fixture(scope="module")
def flaky_study(tmp_path_factory):
    """A study (in-process pool) where many evaluations fail, for two different reasons."""
    return run_study(tmp_path_factory.mktemp("flaky"), "toy_models:flaky", 24,
                     {"pool": "inprocess", "procs": 3})


def store_rows(expdir):
    store = SQLiteStore(expdir / "results.db", create=False)
    try:
        return store.rows(), store.attempts(), store.meta("final")
    finally:
        store.close()


def one_error_line(done, *needles):
    """``done`` failed with exit 2 and one ``emews: error:`` line naming every needle."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("emews: error: "), done.stderr
    for needle in needles:
        assert str(needle) in lines[0], (needle, lines[0])
    return lines[0]


# --- 1. every metric is kept --------------------------------------------------------------

def test_every_final_metric_of_a_history_is_stored_with_its_attempt(metrics_study):
    rows, attempts, _ = store_rows(metrics_study)
    assert len(rows) == 16 and {r["status"] for r in rows} == {"done"}
    for row in rows:
        x2 = row["params"]["x"] ** 2
        assert row["metrics"] == pytest.approx({"val_loss": x2, "loss": 2.0})
        assert row["result"] == pytest.approx(x2)  # MODEL_RETURN picked the objective
    assert [a["metrics"] for a in attempts] == [r["metrics"] for r in rows]


# --- 2. status ------------------------------------------------------------------------------

def test_status_of_a_finished_study_agrees_with_the_store(flaky_study):
    rows, _, final = store_rows(flaky_study)
    info = json.loads(cli("status", flaky_study, "--json").stdout)
    counts = collections.Counter(r["status"] for r in rows)
    assert {k: v for k, v in info["counts"].items() if v} == dict(counts)
    assert info["state"] == "finished" and info["stop_reason"] == final["stop_reason"]
    done = [r for r in rows if r["status"] == "done"]
    best = min(done, key=lambda r: (r["result"], r["id"]))
    assert info["best"]["id"] == best["id"] and info["best"]["value"] == best["result"]
    errors = [r["error"] for r in rows if r["status"] == "failed"]
    bad_x = [e for e in errors if e.startswith("RuntimeError: bad x ")]   # x differs in each
    assert len(set(bad_x)) > 1 and len(bad_x) < len(errors)   # and NaN results
    assert sorted(f["count"] for f in info["failures"]) == sorted(
        [len(bad_x), len(errors) - len(bad_x)])
    assert [f["reason"] in errors for f in info["failures"]] == [True, True]
    reasons = collections.Counter({f["reason"]: f["count"] for f in info["failures"]})
    assert info["rate_per_minute"] > 0 and info["eta_seconds"] is None
    text = cli("status", flaky_study)
    assert text.returncode == 0
    assert f"{best['result']:.6g}" in text.stdout and final["stop_reason"] in text.stdout
    top_reason, top_count = reasons.most_common(1)[0]
    assert f"failed {top_count}x: {top_reason.splitlines()[0]}" in text.stdout
    assert f"tracebacks: {flaky_study}/out/out-R.txt (R: the rank that ran the evaluation)" \
        in text.stdout


# --- 3. show ----------------------------------------------------------------------------------

def test_show_lists_the_best_with_every_metric_and_filters_safely(metrics_study):
    rows, _, _ = store_rows(metrics_study)
    shown = cli("show", metrics_study, "--top", 3)
    assert shown.returncode == 0, shown.stderr
    best = sorted(rows, key=lambda r: (r["result"], r["id"]))
    assert "loss" in shown.stdout and f"{best[0]['result']:.6g}" in shown.stdout
    assert "MPI rank" in shown.stdout   # the rank that ran it, not a place in the ranking
    assert f"{best[3]['result']:.6g}" not in shown.stdout
    where = "lr < 0.01 and act == relu and loss >= 2"
    exported = cli("show", metrics_study, "--where", where, "--csv")
    records = list(csv.DictReader(io.StringIO(exported.stdout)))
    expected = [r for r in best if r["params"]["lr"] < 0.01 and r["params"]["act"] == "relu"]
    assert [int(r["id"]) for r in records] == [r["id"] for r in expected]
    assert all(float(r["loss"]) == 2.0 and float(r["val_loss"]) == pytest.approx(
        float(r["result"])) for r in records)
    as_json = json.loads(cli("show", metrics_study, "--where", "x > 0", "--json").stdout)
    assert [r["id"] for r in as_json] == [r["id"] for r in best if r["params"]["x"] > 0]
    assert all(set(r) >= {"x", "lr", "n", "act", "val_loss", "loss"} for r in as_json)


def test_show_into_a_pipe_keeps_each_row_on_one_line(metrics_study):
    rows, _, _ = store_rows(metrics_study)
    env = dict(os.environ, PYTHONPATH=str(SUPPORT), COLUMNS="40")   # a narrow batch log
    shown = subprocess.run([sys.executable, "-m", "emews", "show", str(metrics_study)],
                           env=env, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    shown_rows = [line for line in shown.stdout.splitlines() if line.startswith("│ ")]
    by_id = {row["id"]: row for row in rows}
    assert len(shown_rows) == 10   # --top's default
    for line in shown_rows:
        row = by_id[int(line.split()[1])]
        values = [f"{row['result']:.6g}", f"{row['params']['lr']:.6g}", row["params"]["act"]]
        assert all(f" {value} " in line for value in values), (values, line)


def test_show_failed_lists_the_failures_with_their_reasons(flaky_study):
    rows, _, _ = store_rows(flaky_study)
    failed = [r for r in rows if r["status"] == "failed"]
    as_json = json.loads(cli("show", flaky_study, "--failed", "--json").stdout)
    assert [(r["id"], r["error"]) for r in as_json] == [(r["id"], r["error"]) for r in failed]
    table = cli("show", flaky_study, "--failed", "--top", 50).stdout
    assert "RuntimeError: bad x" in table and "the model returned NaN" in table


@pytest.mark.parametrize("where, rule", [
    ("lr < 0.01; DROP TABLE evaluations", "NAME OP VALUE"),
    ("__import__('os') == 1", "NAME OP VALUE"),
    ("nope < 1", "must be a parameter or metric"),
    ("lr ~ 1", "NAME OP VALUE"),
])
def test_a_where_that_is_not_a_plain_comparison_is_refused(metrics_study, where, rule):
    one_error_line(cli("show", metrics_study, "--where", where), "--where", rule)
    assert len(store_rows(metrics_study)[0]) == 16


# --- 4. plot and report -----------------------------------------------------------------------

def test_plot_uses_a_log_axis_over_decades(metrics_study, tmp_path):
    from emews.inspect import load
    from emews.inspect._plot import draw_convergence, pyplot

    rows, _, _ = store_rows(metrics_study)
    values = [r["result"] for r in rows]
    assert math.log10(max(values) / min(values)) > 2  # the study spans decades
    figure, axes = pyplot().subplots()
    draw_convergence(axes, load(metrics_study))
    assert axes.get_yscale() == "log"
    figure, axes = pyplot().subplots()
    draw_convergence(axes, load(metrics_study), metric="loss")  # all 2.0
    assert axes.get_yscale() == "linear"
    done = cli("plot", metrics_study, "--metric", "loss", "-o", tmp_path / "loss.png")
    assert done.returncode == 0 and (tmp_path / "loss.png").read_bytes()[:4] == b"\x89PNG"


def chromium(*args):
    browser = shutil.which("chromium")
    if browser is None:
        pytest.skip("Debian's chromium is not installed (bash scripts/apt-deps.sh)")
    return subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox",
                           "--enable-logging=stderr", "--v=0", *args], capture_output=True,
                          text=True, timeout=120)


def console_messages(stderr):
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def image_widths(page, tmp_path):
    """The natural width of each image of the report ``page`` once Chromium has loaded it
    (0: not decoded), and Chromium's console lines (a probe logs ``probed``)."""
    probe = page.replace("</body>", "<script>window.addEventListener('load', () => {"
                         "const p = document.createElement('pre'); p.id = 'widths';"
                         "p.textContent = [...document.images].map(i => i.naturalWidth)"
                         ".join(','); document.body.appendChild(p);"
                         "console.log('probed'); });</script></body>")
    (tmp_path / "probe.html").write_text(probe)
    probed = chromium("--dump-dom", "--virtual-time-budget=5000",
                      (tmp_path / "probe.html").as_uri())
    assert probed.returncode == 0, probed.stderr[-2000:]
    widths = probed.stdout.split('<pre id="widths">')[1].split("<")[0].split(",")
    return [int(w) for w in widths], console_messages(probed.stderr)


def test_the_report_is_one_self_contained_page_that_chromium_renders(flaky_study, tmp_path):
    import numpy
    from matplotlib import image

    done = cli("report", flaky_study, "-o", tmp_path / "r.html")
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "r.html").read_text()
    assert "RandomForestRegressor" in page and "permutation_importance" in page
    assert "RuntimeError: bad x" in page  # the failure table
    sources = [part.split('"', 1)[0] for part in page.split(' src="')[1:]]
    assert len(sources) == 5 and all(s.startswith("data:image/png;base64,") for s in sources)
    assert "http://" not in page and "https://" not in page
    pngs = sorted(p.name for p in tmp_path.glob("r_*.png"))
    assert pngs == ["r_convergence.png", "r_importance.png", "r_parallel.png", "r_params.png",
                    "r_timeline.png"]
    loaded = chromium("--dump-dom", (tmp_path / "r.html").as_uri())
    assert loaded.returncode == 0 and "Parameter importance" in loaded.stdout
    assert console_messages(loaded.stderr) == []
    # The same page with a probe: every image decoded (and console lines are seen at all).
    widths, console = image_widths(page, tmp_path)
    assert len(widths) == 5 and all(w > 0 for w in widths)
    assert any("probed" in line for line in console)
    shot = chromium("--screenshot=" + str(tmp_path / "shot.png"), "--window-size=1200,2400",
                    (tmp_path / "r.html").as_uri())
    assert shot.returncode == 0
    pixels = image.imread(tmp_path / "shot.png")
    assert pixels.shape[:2] == (2400, 1200)
    assert len(numpy.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) > 50


# --- 5. export and emews.load -------------------------------------------------------------------

def test_export_to_optuna_reads_back_equal_values(flaky_study, tmp_path):
    import optuna

    url = f"sqlite:///{tmp_path / 'study.db'}"
    done = cli("export", flaky_study, "--to", "optuna", url)
    assert done.returncode == 0, done.stderr
    rows, _, _ = store_rows(flaky_study)
    loaded = optuna.load_study(study_name=flaky_study.name, storage=url)
    trials = sorted(loaded.trials, key=lambda t: t.user_attrs["emews_id"])
    assert [t.user_attrs["emews_id"] for t in trials] == [r["id"] for r in rows]
    for trial, row in zip(trials, rows):
        assert trial.params == row["params"]
        assert trial.user_attrs["run_id"] == row["run_id"]
        if row["status"] == "done":
            assert trial.state == optuna.trial.TrialState.COMPLETE
            assert trial.value == row["result"]
        else:
            assert trial.state == optuna.trial.TrialState.FAIL
            assert trial.user_attrs["error"] == row["error"]
    assert loaded.best_value == min(r["result"] for r in rows if r["status"] == "done")
    dists = trials[0].distributions
    assert dists["lr"] == optuna.distributions.FloatDistribution(1e-4, 1.0, log=True)
    assert dists["n"] == optuna.distributions.IntDistribution(0, 3)
    assert dists["act"] == optuna.distributions.CategoricalDistribution(["relu", "tanh"])
    again = cli("export", flaky_study, "--to", "optuna", url)
    one_error_line(again, url, "--study-name", flaky_study.name)


def test_export_to_optuna_keeps_the_metrics(metrics_study, tmp_path):
    import optuna

    url = f"sqlite:///{tmp_path / 'm.db'}"
    assert cli("export", metrics_study, "--to", "optuna", url, "--study-name", "m").returncode == 0
    rows, _, _ = store_rows(metrics_study)
    trials = sorted(optuna.load_study(study_name="m", storage=url).trials,
                    key=lambda t: t.user_attrs["emews_id"])
    assert [t.user_attrs["metrics"] for t in trials] == [r["metrics"] for r in rows]


@pytest.mark.parametrize("module", ["pandas", "pyarrow"])
def test_export_to_parquet_without_its_extra_names_the_command_and_the_extra(
        metrics_study, tmp_path, module):
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / f"{module}.py").write_text(f"raise ImportError(name={module!r})\n")
    env = dict(os.environ, PYTHONPATH=f"{blocker}:{SUPPORT}")
    done = subprocess.run([sys.executable, "-m", "emews", "export", str(metrics_study), "--to",
                           "parquet", str(tmp_path / "e.parquet")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and not (tmp_path / "e.parquet").exists()
    assert done.stderr.splitlines() == [f"emews: error: emews export --to parquet: needs "
                                        f"{module}: pip install 'emews-hpo[export]'"]


def test_export_to_csv_and_parquet_and_load_from_python(metrics_study, tmp_path):
    import pandas

    rows, _, _ = store_rows(metrics_study)
    assert cli("export", metrics_study, "--to", "csv", tmp_path / "e.csv").returncode == 0
    assert cli("export", metrics_study, "--to", "parquet", tmp_path / "e.parquet").returncode == 0
    for frame in (pandas.read_csv(tmp_path / "e.csv"), pandas.read_parquet(tmp_path / "e.parquet")):
        assert list(frame["id"]) == [r["id"] for r in rows]
        assert list(frame["x"]) == pytest.approx([r["params"]["x"] for r in rows])
        assert list(frame["act"]) == [r["params"]["act"] for r in rows]
        assert list(frame["val_loss"]) == pytest.approx([r["metrics"]["val_loss"] for r in rows])
        assert list(frame["loss"]) == [2.0] * len(rows)
    study = emews.load(metrics_study)
    best = min(rows, key=lambda r: (r["result"], r["id"]))
    assert study.best["id"] == best["id"] and study.best["metrics"] == best["metrics"]
    frame = study.trials_dataframe()
    assert frame.shape[0] == 16 and {"x", "lr", "n", "act", "val_loss", "loss"} <= set(frame)
    assert study.report(tmp_path / "api.html") == tmp_path / "api.html"


# --- 6. clear errors ----------------------------------------------------------------------------

@pytest.mark.parametrize("command", [["status"], ["show"], ["plot"], ["report"],
                                     ["export", "--to", "csv", "out.csv"]])
def test_each_command_names_a_bad_experiment_directory(command, tmp_path):
    missing = tmp_path / "nowhere"
    one_error_line(cli(*command[:1], missing, *command[1:], cwd=tmp_path), missing,
                   "no such directory")
    one_error_line(cli(*command[:1], tmp_path, *command[1:], cwd=tmp_path), tmp_path,
                   "holding results.db")
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir(exist_ok=True)
    (corrupt / "results.db").write_bytes(b"not a database" * 200)
    one_error_line(cli(*command[:1], corrupt, *command[1:], cwd=tmp_path),
                   corrupt / "results.db", "readable SQLite store")


def test_bad_options_and_unwritable_outputs_are_one_line_each(metrics_study, tmp_path):
    unwritable = tmp_path / "no" / "such" / "dir"
    cases = [
        (["show", metrics_study, "--top", "0"], ["--top", "positive integer", "'0'"]),
        (["show", metrics_study, "--top", "many"], ["--top", "'many'"]),
        (["show", metrics_study, "--csv", "--json"], ["--csv or --json"]),
        (["show", metrics_study, "--bogus"], ["--bogus"]),
        (["status", metrics_study, "--json", "extra"], ["extra"]),
        (["plot", metrics_study, "--metric", "acc"], ["--metric", "val_loss, loss", "'acc'"]),
        (["plot", metrics_study, "-o", unwritable / "p.png"], [unwritable / "p.png",
                                                                 "writable"]),
        (["report", metrics_study, "-o", unwritable / "r.html"], [unwritable / "r.html",
                                                                  "existing directory"]),
        (["report", metrics_study, "-o", tmp_path], [tmp_path, "not a directory"]),
        (["export", metrics_study], ["--to"]),
        (["export", metrics_study, "--to", "xls", "f"], ["--to", "optuna", "'xls'"]),
        (["export", metrics_study, "--to", "csv", unwritable / "e.csv"], [unwritable / "e.csv",
                                                                          "writable"]),
        (["export", metrics_study, "--to", "csv", tmp_path], [tmp_path, "not a directory"]),
        (["export", metrics_study, "--to", "optuna", "study.db"], ["sqlite:///", "study.db"]),
        (["export", metrics_study, "--to", "optuna", f"sqlite:///{unwritable}/s.db"],
         [f"{unwritable}/s.db", "written"]),
    ]
    for args, needles in cases:
        one_error_line(cli(*args, cwd=tmp_path), *needles)
