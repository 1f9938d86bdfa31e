"""A peer optimizer in a process of its own, in its own virtualenv (:mod:`benchmarks.peers`):
``python peer_server.py PEER SEED BUDGET`` reads JSON lines on stdin and answers each on stdout.

::

    {"space": [...]}                   -> {"ok": true}        first: the space (Space.to_json())
    {"ask": n}                         -> {"points": [{name: value}, ...]}
    {"tell": [[point, value], ...]}    -> {"ok": true}

This file imports nothing of ours (the virtualenv has only the peer): it runs as a script.
What the peer prints itself goes to stderr.
"""

import json
import os
import sys
import tempfile


class Smac:
    """SMAC3's ``HyperparameterOptimizationFacade`` with its defaults (random forest, log EI,
    Sobol initial design, intensifier), on its ask/tell interface; the objective is
    deterministic (one seed per configuration)."""

    def __init__(self, space, seed, budget):
        from ConfigSpace import (CategoricalHyperparameter, ConfigurationSpace,
                                 UniformFloatHyperparameter, UniformIntegerHyperparameter)
        from smac import HyperparameterOptimizationFacade, Scenario

        made = {"float": lambda p: UniformFloatHyperparameter(
                    p["name"], p["lower"], p["upper"], log=p.get("log", False)),
                "int": lambda p: UniformIntegerHyperparameter(
                    p["name"], p["lower"], p["upper"], log=p.get("log", False)),
                "categorical": lambda p: CategoricalHyperparameter(p["name"], p["values"])}
        configspace = ConfigurationSpace(seed=seed)
        configspace.add([made[p["type"]](p) for p in space])
        self.output = tempfile.TemporaryDirectory(prefix="smac-")
        scenario = Scenario(configspace, deterministic=True, n_trials=budget, seed=seed,
                            output_directory=self.output.name)
        self.smac = HyperparameterOptimizationFacade(
            scenario, target_function=lambda config, seed=0: 0.0, overwrite=True,
            logging_level=40)
        self.running = {}

    def ask(self, n):
        points = []
        for _ in range(n):
            info = self.smac.ask()
            point = {k: _plain(v) for k, v in dict(info.config).items()}
            self.running.setdefault(_key(point), []).append(info)
            points.append(point)
        return points

    def tell(self, told):
        from smac.runhistory.dataclasses import TrialValue

        for point, value in told:
            info = self.running[_key(point)].pop(0)
            self.smac.tell(info, TrialValue(cost=value if value is not None else float("inf")))


PEERS = {"smac": Smac}


def _plain(value):
    return value.item() if hasattr(value, "item") else value


def _key(point):
    return json.dumps(point, sort_keys=True)


def serve(peer, lines, out):
    """Answer each request of ``lines`` on ``out``; the first builds the peer."""
    optimizer = None
    for line in lines:
        request = json.loads(line)
        if "space" in request:
            optimizer = PEERS[peer[0]](request["space"], int(peer[1]), int(peer[2]))
            answer = {"ok": True}
        elif "ask" in request:
            answer = {"points": optimizer.ask(request["ask"])}
        else:
            optimizer.tell(request["tell"])
            answer = {"ok": True}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    answers = os.fdopen(os.dup(1), "w")     # what the peer prints goes to stderr instead
    os.dup2(2, 1)
    serve(sys.argv[1:], sys.stdin, answers)
