"""A peer optimizer in a process of its own, in its own virtualenv (:mod:`benchmarks.peers`):
``python peer_server.py PEER SEED BUDGET`` reads JSON lines on stdin and answers each on stdout.

::

    {"space": [...]}                   -> {"ok": true}        first: the space (Space.to_json())
    {"space": [...], "fidelity": [min, max]}                  the same for a multi-fidelity peer
    {"ask": n}                         -> {"points": [{name: value}, ...]}
    {"tell": [[point, value], ...]}    -> {"ok": true}

``PEER`` is the contender's name (:data:`PEERS`). A multi-fidelity peer (SMAC3's
``MultiFidelityFacade``, DEHB, syne-tune's ASHA) is given its fidelity's range (epochs), and
each point it proposes carries the epochs to train it for (``"epochs"``) and, where it
continues a configuration's training, those it trained before (``"resume"``); a point is
told back as it was asked, with them.

This file imports nothing of ours (the virtualenv has only the peer): it runs as a script.
What the peer prints itself goes to stderr.
"""

import json
import os
import sys
import tempfile


class Pending:
    """What a peer handed out with each point asked and not yet told (its trial, its job),
    by the point; the same point asked twice is told in the order it was asked."""

    def __init__(self):
        self.handles = {}

    def add(self, point, handle):
        self.handles.setdefault(_key(point), []).append(handle)

    def take(self, point):
        return self.handles[_key(point)].pop(0)


def _configspace(space, seed):
    """The ConfigSpace of ``space`` (Space.to_json(), constants left out), seeded."""
    from ConfigSpace import (CategoricalHyperparameter, ConfigurationSpace,
                             UniformFloatHyperparameter, UniformIntegerHyperparameter)

    made = {"float": lambda p: UniformFloatHyperparameter(
                p["name"], p["lower"], p["upper"], log=p.get("log", False)),
            "int": lambda p: UniformIntegerHyperparameter(
                p["name"], p["lower"], p["upper"], log=p.get("log", False)),
            "categorical": lambda p: CategoricalHyperparameter(p["name"], p["values"])}
    configspace = ConfigurationSpace(seed=seed)
    configspace.add([made[p["type"]](p) for p in space])
    return configspace


class Smac:
    """SMAC3's ``HyperparameterOptimizationFacade`` with its defaults (random forest, log EI,
    Sobol initial design, intensifier), on its ask/tell interface; the objective is
    deterministic (one seed per configuration). Given a ``fidelity`` (epochs), its
    ``MultiFidelityFacade`` instead, with its defaults (random forest, log EI, random initial
    design, the ``Hyperband`` intensifier with eta = 3), from ``min_budget`` to ``max_budget``
    epochs; ``n_trials`` is then the most evaluations the budget allows (the run's loop ends
    it)."""

    def __init__(self, space, seed, budget, fidelity=None):
        from smac import HyperparameterOptimizationFacade, MultiFidelityFacade, Scenario

        self.output = tempfile.TemporaryDirectory(prefix="smac-")
        facade, limits = HyperparameterOptimizationFacade, {"n_trials": budget}
        if fidelity is not None:
            facade = MultiFidelityFacade
            limits = {"n_trials": budget * fidelity[1] // fidelity[0],
                      "min_budget": fidelity[0], "max_budget": fidelity[1]}
        scenario = Scenario(_configspace(space, seed), deterministic=True, seed=seed,
                            output_directory=self.output.name, **limits)
        self.smac = facade(scenario, target_function=lambda config, seed=0, budget=None: 0.0,
                           overwrite=True, logging_level=40)
        self.running = Pending()

    def ask(self, n):
        points = []
        for _ in range(n):
            info = self.smac.ask()
            point = {k: _plain(v) for k, v in dict(info.config).items()}
            if info.budget is not None:
                point["epochs"] = int(round(info.budget))
            self.running.add(point, info)
            points.append(point)
        return points

    def tell(self, told):
        from smac.runhistory.dataclasses import TrialValue

        for point, value in told:
            info = self.running.take(point)
            self.smac.tell(info, TrialValue(cost=value if value is not None else float("inf")))


class Dehb:
    """DEHB (differential evolution within Hyperband) with its defaults (``DEHB(cs,
    min_fidelity, max_fidelity)``: eta = 3, mutation factor 0.5, crossover probability 0.5,
    ``rand1_bin``, the ``immediate`` async strategy), one worker of its own (``n_workers = 1``:
    no Dask; the run's loop evaluates), on its ``ask`` / ``tell``; a failure is told as an
    infinite fitness, each evaluation's cost as its epochs."""

    def __init__(self, space, seed, budget, fidelity):
        from dehb import DEHB

        self.output = tempfile.TemporaryDirectory(prefix="dehb-")
        self.dehb = DEHB(cs=_configspace(space, seed), min_fidelity=fidelity[0],
                         max_fidelity=fidelity[1], n_workers=1, seed=seed,
                         output_path=self.output.name, log_level="ERROR")
        self.running = Pending()

    def ask(self, n):
        points = []
        for _ in range(n):
            job = self.dehb.ask()
            point = {k: _plain(v) for k, v in dict(job["config"]).items()}
            point["epochs"] = int(round(job["fidelity"]))
            self.running.add(point, job)
            points.append(point)
        return points

    def tell(self, told):
        for point, value in told:
            self.dehb.tell(self.running.take(point),
                           {"fitness": float("inf") if value is None else value,
                            "cost": point["epochs"]})


class Hebo:
    """HEBO (Huawei's winner of the NeurIPS 2020 black-box optimization challenge) with its
    defaults (``HEBO(space)``: its GP surrogate on power-transformed values, the MACE
    acquisition optimized by NSGA-II, Sobol initial points), proposing a batch with
    ``suggest(n_suggestions=n)``; its random generators seeded (numpy, torch, the Sobol
    scramble). A failure is not observed."""

    def __init__(self, space, seed, budget):
        import numpy as np
        import torch
        from hebo.design_space.design_space import DesignSpace
        from hebo.optimizers.hebo import HEBO

        np.random.seed(seed)
        torch.manual_seed(seed)
        made = {"float": lambda p: {"type": "pow" if p.get("log") else "num",
                                    "lb": p["lower"], "ub": p["upper"]},
                "int": lambda p: {"type": "pow_int" if p.get("log") else "int",
                                  "lb": p["lower"], "ub": p["upper"]},
                "categorical": lambda p: {"type": "cat", "categories": p["values"]}}
        self.space = space
        self.hebo = HEBO(DesignSpace().parse([{"name": p["name"], **made[p["type"]](p)}
                                              for p in space]), scramble_seed=seed)

    def ask(self, n):
        self.asked = self.hebo.suggest(n_suggestions=n)
        return [{p["name"]: _plain(row[p["name"]]) for p in self.space}
                for _, row in self.asked.iterrows()]

    def tell(self, told):
        import numpy as np
        import pandas as pd

        kept = [(point, value) for point, value in told if value is not None]
        if kept:
            frame = pd.DataFrame([point for point, _ in kept])[list(self.asked.columns)]
            self.hebo.observe(frame, np.array([[value] for _, value in kept]))


class DeepHyperCbo:
    """DeepHyper's centralized Bayesian optimization (``CBO``) with its defaults (extra-trees
    surrogate, UCB with a decaying kappa, its mixed genetic acquisition optimizer, constant
    liar ``cl_max`` for pending points; ``random_state = seed``), on its ``ask`` / ``tell``; it
    maximizes, so it is told the negated loss, a failure as ``"F"``."""

    def __init__(self, space, seed, budget):
        from deephyper.hpo import CBO, HpProblem

        problem = HpProblem()
        for p in space:
            if p["type"] == "categorical":
                problem.add_hyperparameter(list(p["values"]), p["name"])
            else:
                kind = float if p["type"] == "float" else int
                bounds = (kind(p["lower"]), kind(p["upper"]))
                problem.add_hyperparameter((*bounds, "log-uniform") if p.get("log") else bounds,
                                           p["name"])
        self.names = [p["name"] for p in space]
        self.cbo = CBO(problem, random_state=seed, log_dir=tempfile.mkdtemp(prefix="cbo-"))

    def ask(self, n):
        return [{k: _plain(config[k]) for k in self.names} for config in self.cbo.ask(n)]

    def tell(self, told):
        self.cbo.tell([(point, "F" if value is None else -value) for point, value in told])


class SyneTuneAsha:
    """syne-tune's ``ASHA`` (its ``baselines.ASHA``: asynchronous successive halving, the
    stopping kind, one bracket, random search, its defaults: grace period the fidelity's
    minimum, reduction factor 3), on its scheduler's ``suggest`` / ``on_trial_result``. A
    trial is proposed up to its first rung; one that ASHA lets continue is proposed again,
    before any new one, from the epochs it reached (``"resume"``) to its next rung, so it
    takes the next free worker as if it had kept its own; a stopped one is not."""

    def __init__(self, space, seed, budget, fidelity):
        import numpy as np
        from syne_tune.config_space import choice, lograndint, loguniform, randint, uniform
        from syne_tune.optimizer.baselines import ASHA

        np.random.seed(seed)       # ASHA draws a trial's bracket from numpy's global generator
        made = {"float": lambda p: (loguniform if p.get("log") else uniform)(p["lower"],
                                                                            p["upper"]),
                "int": lambda p: (lograndint if p.get("log") else randint)(p["lower"],
                                                                          p["upper"]),
                "categorical": lambda p: choice(p["values"])}
        self.top = fidelity[1]
        self.asha = ASHA({p["name"]: made[p["type"]](p) for p in space}, metric="loss",
                         time_attr="epoch", max_t=self.top, grace_period=fidelity[0],
                         random_seed=seed)
        self.rungs = sorted({int(m) for m, _ in self.asha.brackets[0].rungs} | {self.top})
        self.trials, self.running, self.continuing = 0, Pending(), []

    def ask(self, n):
        from datetime import datetime

        from syne_tune.backend.trial_status import Trial

        points = []
        for _ in range(n):
            if self.continuing:
                points.append(self.continuing.pop(0))
                continue
            config = self.asha.suggest().config
            trial = Trial(trial_id=self.trials, config=config, creation_time=datetime.now())
            self.trials += 1
            self.asha.on_trial_add(trial)
            point = {**{k: _plain(v) for k, v in config.items()}, "epochs": self.rungs[0],
                     "resume": 0}
            self.running.add(point, trial)
            points.append(point)
        return points

    def tell(self, told):
        from syne_tune.optimizer.scheduler import SchedulerDecision

        for point, value in told:
            trial = self.running.take(point)
            result = {"loss": float("inf") if value is None else value, "epoch": point["epochs"]}
            if point["epochs"] >= self.top:
                self.asha.on_trial_complete(trial, result)
            elif self.asha.on_trial_result(trial, result) == SchedulerDecision.CONTINUE:
                after = {**point, "resume": point["epochs"],
                         "epochs": min(r for r in self.rungs if r > point["epochs"])}
                self.running.add(after, trial)
                self.continuing.append(after)


PEERS = {"SMAC3 HPO": Smac, "SMAC3 MF": Smac, "DEHB": Dehb, "HEBO": Hebo,
         "DeepHyper CBO": DeepHyperCbo, "syne-tune ASHA": SyneTuneAsha}


def _plain(value):
    return value.item() if hasattr(value, "item") else value


def _key(point):
    return json.dumps(point, sort_keys=True)


def typed(space, point):
    """``point`` with the value of each integer parameter of ``space`` an int: HEBO proposes
    them as floats (``max_depth = 8.0``), which scikit-learn refuses."""
    integers = {p["name"] for p in space if p["type"] == "int"}
    return {name: int(round(value)) if name in integers else value
            for name, value in point.items()}


def serve(peer, lines, out):
    """Answer each request of ``lines`` on ``out``; the first builds the peer."""
    optimizer = space = None
    for line in lines:
        request = json.loads(line)
        if "space" in request:
            space = request["space"]
            fidelity = {"fidelity": request["fidelity"]} if "fidelity" in request else {}
            optimizer = PEERS[peer[0]](space, int(peer[1]), int(peer[2]), **fidelity)
            answer = {"ok": True}
        elif "ask" in request:
            answer = {"points": [typed(space, point) for point in optimizer.ask(request["ask"])]}
        else:
            optimizer.tell(request["tell"])
            answer = {"ok": True}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    answers = os.fdopen(os.dup(1), "w")     # what the peer prints goes to stderr instead
    os.dup2(2, 1)
    serve(sys.argv[1:], sys.stdin, answers)
