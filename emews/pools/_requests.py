"""What one evaluation asks of its pool: ranks, GPUs and nodes, fixed or from its point.

``[study] ranks_per_eval``, ``gpus_per_eval`` and ``nodes_per_eval`` (docs/src/parallel-evals.md)
are each a number, or ``"$name"``: the value of the point's parameter ``name``.
:meth:`Demand.of` resolves them for one point into a checked :class:`Request`.
"""

import functools
import itertools
import re
from dataclasses import dataclass
from fractions import Fraction

from .._validation import Invalid, Number, Rule

PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_.-]*)\Z")
SETTINGS = ("ranks_per_eval", "gpus_per_eval", "nodes_per_eval")
GPU_DENOMINATOR = 1000   # a GPU's share is exact to a thousandth (0.1 + 0.2 fits 0.3)


class PerEval(Rule):
    """A number under ``rule``, or ``"$name"`` (a parameter of the point)."""

    def __init__(self, rule):
        self.rule = rule

    def __call__(self, value):
        if isinstance(value, str):
            if PARAM.match(value):
                return value
            raise Invalid('must be a number or "$name" (a parameter of the point)', value)
        return self.rule(value)

    def from_text(self, text):
        return text if text.startswith("$") else self.rule.from_text(text)


RULES = {"ranks_per_eval": Number(integer=True, minimum=1, words=True),
         "gpus_per_eval": Number(above=0, words=True),
         "nodes_per_eval": Number(integer=True, minimum=1, words=True)}


@dataclass(frozen=True)
class Request:
    """One evaluation's needs: ``ranks`` worker slots, ``gpus`` (a Fraction; 0: none) and
    ``nodes`` (how many distinct hosts its ranks lie on; ``None``: any)."""

    ranks: int = 1
    gpus: Fraction = Fraction(0)
    nodes: int | None = None

    @functools.cached_property
    def share(self):
        """The GPUs each rank takes (a Fraction)."""
        return self.gpus / self.ranks

    @functools.cached_property
    def shape(self):
        """What tells requests apart for placement: ``(ranks, nodes, gpus)``, cheap to hash."""
        return self.ranks, self.nodes, float(self.gpus)

    def split(self):
        """How many ranks go on each of its ``nodes`` hosts (as even as can be), or ``None``."""
        if self.nodes is None:
            return None
        each, extra = divmod(self.ranks, self.nodes)
        return [each + 1] * extra + [each] * (self.nodes - extra)


class Demand:
    """The study's ``[study]`` resource settings (``settings``: name -> value, each a number,
    ``"$name"`` or ``None``); ``where(name)`` names a setting in error messages."""

    def __init__(self, settings, where=None):
        self.settings = {name: settings.get(name) for name in SETTINGS}
        self.where = where or (lambda name: f"[study].{name}")

    @classmethod
    def from_config(cls, cfg):
        """The demand of a resolved :class:`~emews._config.Config`."""
        return cls({name: getattr(cfg.study, name) for name in SETTINGS},
                   lambda name: cfg.where("study", name))

    @property
    def trivial(self):
        """True when every evaluation is one rank without GPUs (the plain, fastest path)."""
        ranks, gpus, nodes = (self.settings[name] for name in SETTINGS)
        return ranks in (None, 1) and gpus is None and nodes is None

    @property
    def parameters(self):
        """The names of the point's parameters the settings read."""
        return [PARAM.match(value).group(1) for value in self.settings.values()
                if isinstance(value, str)]

    def of(self, params):
        """The :class:`Request` of a point (``params``: a dict); raises :class:`Invalid`
        naming the setting (and the parameter) whose value breaks its rule."""
        values = {}
        for name, value in self.settings.items():   # in the order of SETTINGS
            where = self.where(name)
            if isinstance(value, str):
                key = PARAM.match(value).group(1)
                if key not in params:
                    raise Invalid(f"names the parameter {key!r}, which the point lacks",
                                  value, where)
                where, value = f"{where} (parameter {key!r})", params[key]
            if value is not None:
                try:
                    value = RULES[name](value)
                except Invalid as invalid:
                    raise invalid.inside(where) from None
            values[name] = value
        ranks = int(values["ranks_per_eval"] or 1)
        gpus = Fraction(values["gpus_per_eval"] or 0).limit_denominator(GPU_DENOMINATOR)
        nodes = values["nodes_per_eval"]
        if nodes is not None and nodes > ranks:
            raise Invalid(f"must be at most ranks_per_eval ({ranks})", nodes,
                          self.where("nodes_per_eval"))
        request = Request(ranks, gpus, None if nodes is None else int(nodes))
        if request.share > 1 and request.share.denominator != 1:
            raise Invalid(f"must give each of the {ranks} ranks a whole number of GPUs or a "
                          "fraction of one", float(gpus), self.where("gpus_per_eval"))
        return request

    def extremes(self, space):
        """The requests, each checked (:class:`Invalid`), of the points at the :func:`ends` of
        the parameters of ``space`` (the :class:`~emews._space.Space`) the settings name."""
        names, choices = [], []
        for setting, value in self.settings.items():
            if not isinstance(value, str):
                continue
            name = PARAM.match(value).group(1)
            if space is None or name not in space.names:
                raise Invalid("names a parameter the search space lacks", value,
                              self.where(setting))
            names.append(name)
            choices.append(ends(space[name]))
        return {self.of(dict(zip(names, values))) for values in itertools.product(*choices)}

    def refuse_beyond(self, space, workers, gpus_per_node, where):
        """Refuse (:class:`Invalid`) a study any of whose evaluations could never fit a pool
        of ``workers`` slots (on one node at least), or asks for GPUs with none per node."""
        for request in self.extremes(space):
            if request.ranks > workers:
                raise Invalid(f"asks for evaluations of {request.ranks} ranks, more than the "
                              f"{workers} worker slots of {where}", request.ranks,
                              self.where("ranks_per_eval"))
            if request.gpus and not gpus_per_node:
                raise Invalid("asks for GPUs, but [system] gpus_per_node is 0",
                              float(request.gpus), self.where("gpus_per_eval"))


def ends(param):
    """The values of a search-space parameter a request can reach at its ends: a list's
    values, a range's bounds, a constant's value."""
    if hasattr(param, "values"):
        return list(param.values)
    if hasattr(param, "value"):
        return [param.value]
    return [param.lower, param.upper]
