"""Ray Tune's PBT and PB2, contenders of part 13 (:mod:`benchmarks.pbt`), through Ray Tune's own
API (``Tuner``, ``PopulationBasedTraining``, ``PB2``) with its recommended defaults, in a
virtualenv of its own (made by :func:`benchmarks.peers_runs.install`)::

    benchmarks.pbt: scores(problem, scheduler, seeds, ...)
      -> python -m benchmarks.pbt_ray REQUEST   (Ray's virtualenv: ray.init once; a
                                                  Tuner.fit a seed, its trials the members)
      <- RESULTS: {seed: the best member's final loss}

At equal compute with ours: ``population`` trials (``num_samples``) of ``steps`` training
iterations each (``stop``), ``perturbation_interval`` iterations between perturbations, the
same ``quantile_fraction``; a trial checkpoints its state every ``interval`` iterations (Ray
Tune's recommendation: the perturbation interval) and at the end. The rest is Ray Tune's
default: asynchronous (``synch=False``), ``resample_probability`` 0.25 and factors 1.2 and
0.8 for PBT (a float parameter's domain ``uniform``, or ``loguniform`` on a log scale); PB2's
GP-bandit within each float's bounds (``hyperparam_bounds``, linear, as PB2 takes them).
Each member is given a logical CPU (``ray.init(num_cpus=population)``), as ours gets a
worker. The score is the best final loss of the trials that reached ``steps``.

The problems are :mod:`benchmarks.pbt_problems`' (the part's), imported in Ray's virtualenv
(which holds this repository, editable), so both sides train exactly the same steps. A seed
is a run of the part's cache (:func:`one_run`).
"""

import json
import math
import os
import pickle
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .peers_runs import VENV_DIRECTORY, install, venv_python

REPO = Path(__file__).resolve().parent.parent
SCHEDULERS = {"ray pbt": "pbt", "ray pb2": "pb2"}
# Ray's virtualenv: (its directory's name, what pip installs); PB2 needs GPy and scikit-learn
RAY = {"Ray Tune": ("ray", ("ray[tune]==2.60.0", "GPy==1.15.0", "scikit-learn==1.9.1",
                            "-e", str(REPO)))}
STATE = "state.pkl"


def unavailable(directory=VENV_DIRECTORY, may_install=True):
    """Why Ray Tune cannot run here (its virtualenv installed first when ``may_install``), or
    ``None``."""
    if may_install:
        return install("Ray Tune", directory, RAY)
    if not (Path(directory) / RAY["Ray Tune"][0] / "installed.json").is_file():
        return f"not installed in {directory} (python -m benchmarks pbt installs it)"
    return None


def scores(problem, name, seeds, population, steps, interval, quantile,
           directory=VENV_DIRECTORY):
    """``{seed: loss}``: contender ``name`` (a key of :data:`SCHEDULERS`) on ``problem`` (a
    name of :data:`benchmarks.pbt_problems.PROBLEMS`), one ``Tuner.fit`` a seed, in a process
    of Ray's virtualenv."""
    with tempfile.TemporaryDirectory(prefix="emews-pbt-ray-") as work:
        request, results = Path(work) / "request.json", Path(work) / "results.json"
        request.write_text(json.dumps({
            "problem": problem, "scheduler": SCHEDULERS[name], "seeds": list(seeds),
            "population": population, "steps": steps, "interval": interval,
            "quantile": quantile, "storage": str(Path(work) / "ray"), "out": str(results)}))
        env = dict(os.environ, TUNE_DISABLE_AUTO_CALLBACK_LOGGERS="1", RAY_DEDUP_LOGS="0")
        done = subprocess.run([str(venv_python("Ray Tune", directory, RAY)), "-m",
                               "benchmarks.pbt_ray", str(request)], cwd=REPO, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"Ray Tune's {name} on {problem} exited with status "
                               f"{done.returncode}:\n{done.stderr[-4000:]}")
        return {int(seed): loss for seed, loss in json.loads(results.read_text()).items()}


def one_run(problem, name, seed, population, steps, interval, quantile,
            directory=VENV_DIRECTORY):
    """One seed of contender ``name`` on ``problem``: its line of the part's cache (the
    problem's code, which Ray's process runs, imported here so that its digests name it)."""
    from .pbt_problems import PROBLEMS, run_line

    PROBLEMS[problem]()
    started = time.perf_counter()
    (loss,) = scores(problem, name, [seed], population, steps, interval, quantile,
                     directory).values()
    return run_line(problem, name, "async", seed, loss, time.perf_counter() - started)


# --- in Ray's virtualenv ---------------------------------------------------------------------

def _domains(space, scheduler):
    """Ray Tune's search space of ``space`` (GA JSON floats), and what the scheduler perturbs:
    ``(param_space, mutations)``."""
    from ray import tune

    domains = {p["name"]: (tune.loguniform if p.get("log") else tune.uniform)(p["lower"],
                                                                               p["upper"])
               for p in space}
    if scheduler == "pb2":
        return domains, {p["name"]: [p["lower"], p["upper"]] for p in space}
    return domains, domains


def _trainable(problem_name, steps, interval, finals):
    """Ray Tune's function trainable of ``problem_name``: from the checkpoint it is given (a
    member's own, or a donor's on exploit), ``steps`` steps, a report each step; a trial that
    reaches ``steps`` writes its final loss in the directory ``finals`` (Ray's results may
    lack a trial's last metrics: seen once under load, the whole seed scored ``inf``)."""
    from ray import tune

    from benchmarks.pbt_problems import PROBLEMS

    def train(config):
        problem = PROBLEMS[problem_name]()
        checkpoint = tune.get_checkpoint()
        if checkpoint is None:
            state, step = problem.start(), 0
        else:
            with checkpoint.as_directory() as directory:
                state, step = pickle.loads((Path(directory) / STATE).read_bytes())
        while step < steps:
            state, step = problem.step(state, config), step + 1
            metrics = {"loss": problem.loss(state), "step": step}
            if step == steps:
                (Path(finals) / f"{tune.get_context().get_trial_id()}.json").write_text(
                    json.dumps(metrics["loss"]))
            if step % interval and step < steps:
                tune.report(metrics)
                continue
            with tempfile.TemporaryDirectory() as directory:
                (Path(directory) / STATE).write_bytes(pickle.dumps((state, step)))
                tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(directory))
    return train


def _fit(request, seed):
    """One seed: the best final loss of Ray Tune's population."""
    import numpy as np
    from ray import tune
    from ray.tune.schedulers import PopulationBasedTraining
    from ray.tune.schedulers.pb2 import PB2
    from ray.tune.search.basic_variant import BasicVariantGenerator

    from benchmarks.pbt_problems import PROBLEMS

    random.seed(seed)          # PBT's and PB2's exploit and explore draw from these
    np.random.seed(seed)
    param_space, mutations = _domains(PROBLEMS[request["problem"]]().space,
                                      request["scheduler"])
    common = {"time_attr": "training_iteration",
              "perturbation_interval": request["interval"],
              "quantile_fraction": request["quantile"]}
    scheduler = (PB2(hyperparam_bounds=mutations, **common) if request["scheduler"] == "pb2"
                 else PopulationBasedTraining(hyperparam_mutations=mutations, **common))
    finals = Path(request["storage"]) / f"finals-{seed}"
    finals.mkdir(parents=True)
    tuner = tune.Tuner(
        _trainable(request["problem"], request["steps"], request["interval"], str(finals)),
        param_space=param_space,
        tune_config=tune.TuneConfig(metric="loss", mode="min", scheduler=scheduler,
                                    num_samples=request["population"],
                                    search_alg=BasicVariantGenerator(random_state=seed)),
        run_config=tune.RunConfig(name=f"seed{seed}", storage_path=request["storage"],
                                  stop={"training_iteration": request["steps"]}, verbose=0))
    tuner.fit()
    return min((json.loads(path.read_text()) for path in finals.glob("*.json")),
               default=math.inf)


def main(path):
    """Run the request at ``path`` (written by :func:`scores`)."""
    import ray

    request = json.loads(Path(path).read_text())
    ray.init(num_cpus=request["population"], include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        found = {seed: _fit(request, seed) for seed in request["seeds"]}
    finally:
        ray.shutdown()
    Path(request["out"]).write_text(json.dumps(found))


if __name__ == "__main__":
    main(sys.argv[1])
