"""Genetic algorithms on DEAP with CANDLE/Supervisor's GA settings: generational and steady-state.

``ga`` is DEAP's ``eaSimple`` or ``eaMuPlusLambda`` turned inside out: instead of calling a
``map`` that evaluates a generation, it hands the generation out through ``ask`` and breeds the
next one once ``tell`` has brought every result back::

    ask(n) --> [queue of the generation's unevaluated individuals] --> points out
    tell   --> fitness of the waiting individuals --> generation complete?
               --> survivors (simple: the offspring;
                              mu_plus_lambda: select(parents + offspring))
               --> breed (selTournament + varAnd, or varOr) --> new queue

``ask`` returns fewer points than asked (none at all) while the rest of a generation is still
out; the driver then just waits. ``ga_async`` is the steady-state variant: every free worker
gets a child of two tournament-selected parents at once, and each result replaces the worst
member of the population if it is better, so slow evaluations never idle the pool.

Settings (Supervisor's names in brackets): ``population_size`` [POPULATION_SIZE],
``generations`` [NUM_ITERATIONS; the initial population counts as the first; unlimited by
default: the study's stopping rules end the search], ``strategy`` [GA_STRATEGY],
``offspring_proportion`` [OFFSPRING_PROPORTION; mu_plus_lambda breeds that share of the
population each generation],
``mutation_prob`` [MUT_PROB], ``crossover_prob`` [CX_PROB], ``mutation_indpb`` [MUT_INDPB],
``crossover_indpb`` [CX_INDPB], ``tournament_size`` [TOURNSIZE] and ``population_file``
(initial individuals: Supervisor's CSV with a header of parameter names, or JSON lines).

Design choices:

* Mutation by type, as Supervisor's ``ga_utils``: Gaussian for ``int`` and ``float`` (``sigma``
  from the space file, else a tenth of the range; on a log scale in log10 units) and for
  ``ordered`` (on the position, at least one position by default), clamped to the bounds; a
  different value drawn at random for ``categorical``; a flip for ``logical``. Crossover is
  DEAP's uniform crossover, which keeps every gene's type.
* On a conditional space (:mod:`emews._conditions`) an individual's gene of a parameter
  inactive in it is unset (``None``): crossover and mutation (which leaves unset genes alone)
  are followed by a repair that unsets the genes made inactive and draws at random the genes
  of parameters made active without a value (an SGD optimizer from one parent, its momentum
  from another parent that had none). So an inactive value never leaks into a point, and
  two children that differ only in inactive genes are one point, proposed once.
* A failed result (NaN) and any other non-finite value get the fitness ``+inf``: the worst there
  is, so selection drops them first and the GA never crashes on them.
* A run the pruner stopped ranks below every finished one and above the failures, and among
  the pruned ones by its curve, as Optuna's TPE ranks pruned trials: its fitness is
  :func:`emews.plugin.pruned_value` of its last reported value, set again after each
  tell as the finished values change (its last value itself while none has finished).
* A point the GA has a value for is never sent out again (an unchanged clone or a repeated
  child takes the recorded value), so no budget is spent twice on one point.
* Told points the GA never asked for (a resumed run's history) are immigrants: before the first
  generation the best of them form the initial population (topped up from ``population_file``,
  then at random); later they join the parents of the next generation (``ga_async``: they enter
  the population like any result).
* DEAP draws from Python's global ``random``; the GA swaps its own generator state in around
  every DEAP call and the global state back after it, so a seed makes it repeatable whatever
  else uses ``random``, and the GA never moves the global state. (The swap is not atomic: code
  on another thread drawing from ``random`` during a GA call would see the GA's stream.)
* ``state()`` is plain JSON: both generators' states, every individual (genes and fitness;
  one entry per object, so the generation, its queue and the points in flight share them as
  they did), the values of every told point and the counters.
* A GA that breeds nothing but points it has values for (a small space, used up) for 100
  generations (``ga_async``: children) in a row is done.
* ``nsga2`` and ``nsga3`` (:mod:`.nsga`) are this GA with other parts: what a fitness is
  (``_individual_class``, ``_record``, ``_assign``, ``_record_of``), how the best told points
  are chosen (``_best``), parents, breeding and survivors (``_parents``, ``_breed``,
  ``_survivors``), and what the state adds (``_state_data``, ``_restore_data``);
  ``nsga2_async`` and ``nsga3_async`` are this module's ``ga_async`` with the same parts and
  their own ``_settle``.
"""

import contextlib
import csv
import math
import random
from pathlib import Path

from emews.plugin import (Algorithm, Categorical, ConfigError, Logical, Ordered, PrunedResult,
                          check_choice, check_number, check_text, is_failure, optional_import,
                          pack_state, point_key, pruned_value, pruned_values, unpack_state)

from .sweep import read_upf

FAILED_FITNESS = math.inf
STRATEGIES = ("simple", "mu_plus_lambda")
STALLED = 100   # generations (ga) or children (ga_async) in a row with no new point: done


class GA(Algorithm):
    """Generational GA (DEAP ``eaSimple`` or ``eaMuPlusLambda``) on ask/tell."""

    groups = ("queue", "offspring", "population", "immigrants")   # lists of individuals
    counters = ("generation", "stale")

    def __init__(self, space, seed=None, population_size=20, generations=None,
                 strategy="mu_plus_lambda", offspring_proportion=0.5, mutation_prob=0.8,
                 crossover_prob=0.2, mutation_indpb=0.5, crossover_indpb=0.5, tournament_size=4,
                 population_file=None):
        super().__init__(space, seed)
        optional_import("deap.algorithms", "ga")
        from deap import base, tools

        self.population_size = check_number("population_size", population_size, 2, integer=True)
        self.generations = check_number("generations", generations, 1, integer=True,
                                        allow_none=True)
        self.strategy = check_choice("strategy", strategy, STRATEGIES)
        check_number("offspring_proportion", offspring_proportion, 0, 10)
        self.offspring_count = max(1, round(offspring_proportion * population_size))
        self.mutation_prob = check_number("mutation_prob", mutation_prob, 0, 1)
        self.crossover_prob = check_number("crossover_prob", crossover_prob, 0, 1)
        if strategy == "mu_plus_lambda" and mutation_prob + crossover_prob > 1:
            raise ConfigError("[algorithm].mutation_prob", "mutation_prob + crossover_prob "
                              "must be <= 1 for mu_plus_lambda (each child is made by one of "
                              "them)", (mutation_prob, crossover_prob))
        check_number("mutation_indpb", mutation_indpb, 0, 1)
        check_number("crossover_indpb", crossover_indpb, 0, 1)
        check_number("tournament_size", tournament_size, 1, integer=True)
        self.seeds = read_population(Path(check_text("population_file", population_file)),
                                     space) if population_file is not None else []
        self.individual = self._individual_class()
        self.toolbox = base.Toolbox()
        self.toolbox.register("mate", self._mate, indpb=crossover_indpb)
        self.toolbox.register("mutate", self._mutate, indpb=mutation_indpb)
        self.toolbox.register("select", tools.selTournament, tournsize=tournament_size)
        self.random_state = random.Random(seed).getstate()
        self.known = {}        # point key -> fitness of every told point
        self.pruned = {}       # point key -> last reported value of a pruned run
        self.waiting = {}      # point key -> individuals out for evaluation
        self.queue = []        # individuals of this generation not handed out yet
        self.offspring = []    # this generation, until it is complete
        self.population = []   # evaluated parents
        self.immigrants = []   # told points that were never asked for
        self.generation = 0
        self.stale = 0         # generations in a row that held no new point

    # --- ask/tell ---------------------------------------------------------------------------

    def ask(self, n):
        points = []
        while len(points) < n and not self.stalled:
            if not self.queue:
                if self.waiting or not self._advance():
                    break
                continue
            individual = self.queue.pop(0)
            point = self._point(individual)
            if self._reuse_or_wait(individual, point_key(point)):
                continue
            points.append(point)
        return points

    def tell(self, points, values):
        for point, value in zip(points, values):
            key = point_key(point)
            record = self._record(value)
            if isinstance(value, PrunedResult) and math.isfinite(value.last) \
                    and len(record) == 1:
                self.pruned[key] = value.last
                record = (pruned_value(value.last, self._finished()),)
            self.known[key] = record
            individuals = self.waiting.pop(key, None)
            if individuals is not None:
                for individual in individuals:
                    self._assign(individual, record)
                self._settle(individuals[0], asked=True)
            elif self.space.contains(point):
                immigrant = self._individual(point)
                self._assign(immigrant, record)
                self._settle(immigrant, asked=False)
        if self.pruned:
            self._rank_pruned()

    def _finished(self):
        """The values of the finished runs told so far (failures and pruned runs left out)."""
        return [record[0] for key, record in self.known.items() if key not in self.pruned]

    def _rank_pruned(self):
        """Give every pruned run its fitness from the finished values as they are now."""
        for key, value in zip(self.pruned, pruned_values(self.pruned.values(), self._finished())):
            self.known[key] = (value,)
        for name in self.groups:
            for individual in getattr(self, name) or ():
                key = point_key(self.space.point(individual))
                if key in self.pruned and individual.fitness.valid:
                    self._assign(individual, self.known[key])

    def done(self):
        return self.stalled or (self.generations is not None and
                                self.generation >= self.generations and
                                not self.queue and not self.waiting)

    def state(self):
        return pack_state(self, self._state_data())

    def restore(self, state):
        self._restore_data(unpack_state(self, state))

    def _state_data(self):
        """Everything :meth:`state` saves, as plain data."""
        table, index = [], {}

        def ref(individual):
            if id(individual) not in index:
                index[id(individual)] = len(table)
                table.append([list(individual), list(self._record_of(individual)) or None])
            return index[id(individual)]

        groups = {name: None if getattr(self, name) is None else
                  [ref(i) for i in getattr(self, name)] for name in self.groups}
        waiting = {key: [ref(i) for i in individuals] for key, individuals in self.waiting.items()}
        return {
            "random": self.random_state, "rng": self.rng.bit_generator.state,
            "known": {key: list(record) for key, record in self.known.items()},
            "pruned": self.pruned,
            "individuals": table, "groups": groups, "waiting": waiting,
            "counters": {name: getattr(self, name) for name in self.counters}}

    def _restore_data(self, data):
        """Take up the data of :meth:`_state_data`."""
        version, internal, gauss = data["random"]
        self.random_state = (version, tuple(internal), gauss)
        self.rng.bit_generator.state = data["rng"]
        self.known = {key: tuple(record) if isinstance(record, list) else (record,)
                      for key, record in data["known"].items()}   # a number: saved before MO
        self.pruned = data.get("pruned", {})
        table = []
        for genes, record in data["individuals"]:
            table.append(self.individual(genes))
            if record is not None:
                self._assign(table[-1], tuple(record))
        for name, refs in data["groups"].items():
            setattr(self, name, None if refs is None else [table[i] for i in refs])
        self.waiting = {key: [table[i] for i in refs] for key, refs in data["waiting"].items()}
        for name, value in data["counters"].items():
            setattr(self, name, value)

    @property
    def stalled(self):
        """True once the GA keeps breeding only points it has values for (a small space)."""
        return self.stale >= STALLED

    # --- fitness ----------------------------------------------------------------------------

    def _individual_class(self):
        """DEAP's individual type for emews (a list of genes, one fitness to minimize)."""
        from deap import base, creator

        if not hasattr(creator, "EmewsIndividual"):
            creator.create("EmewsFitness", base.Fitness, weights=(-1.0,))
            creator.create("EmewsIndividual", list, fitness=creator.EmewsFitness)
        return creator.EmewsIndividual

    def _record(self, value):
        """What the GA keeps of a told value (a tuple of floats): its fitness."""
        return (FAILED_FITNESS if is_failure(value) else float(value),)

    def _assign(self, individual, record):
        """Give ``individual`` the fitness of a :meth:`_record`."""
        individual.fitness.values = record

    def _record_of(self, individual):
        """The :meth:`_record` of an evaluated individual (empty when it is not)."""
        return individual.fitness.values

    def _best(self, individuals, k):
        """The best ``k`` of ``individuals`` (for the initial population)."""
        return sorted(individuals, key=lambda i: i.fitness.values[0])[:k]

    # --- generations ------------------------------------------------------------------------

    def _individual(self, point):
        """A DEAP individual: the point's free values, in order (``None`` for inactive ones)."""
        return self.individual(point.get(p.name) for p in self.space.free)

    def _point(self, individual):
        """The point of ``individual``; one that a forbidden clause excludes (bred by crossover
        or mutation) is first drawn again from the space, in place."""
        try:
            return self.space.point(individual)
        except ValueError:
            individual[:] = self._individual(self.space.sample(self.rng)[0])
            return self.space.point(individual)

    def _reuse_or_wait(self, individual, key):
        """Give ``individual`` a recorded value, or attach it to the same point in flight.

        Returns False when the point must be sent out (it is then recorded as waiting).
        """
        if key in self.known:
            self._assign(individual, self.known[key])
            return True
        if key in self.waiting:
            self.waiting[key].append(individual)
            return True
        self.waiting[key] = [individual]
        return False

    def _settle(self, individual, asked):
        """An evaluated individual: asked ones wait for their generation; others immigrate."""
        if not asked:
            self.immigrants.append(individual)

    def _advance(self):
        """Close the finished generation and breed the next; False when there is none."""
        if self.offspring:
            self.population = self._survivors()
            self.offspring = []
        if self.generations is not None and self.generation >= self.generations:
            return False
        self.offspring = self._breed() if self.population else self._initial()
        self.generation += 1
        self.queue = [i for i in self.offspring if not i.fitness.valid]
        fresh = any(point_key(self._point(i)) not in self.known for i in self.queue)
        self.stale = 0 if fresh else self.stale + 1
        return True

    def _initial(self):
        """Best immigrants first, then the population file, then random individuals."""
        told = self._best(self.immigrants, self.population_size)
        self.immigrants = []
        seeds = self.seeds[:self.population_size - len(told)]
        randoms = self.space.sample(self.rng, self.population_size - len(told) - len(seeds))
        return told + [self._individual(p) for p in seeds + randoms]

    def _breed(self):
        from deap import algorithms

        self.population += self.immigrants
        self.immigrants = []
        with self._own_random():
            if self.strategy == "simple":
                parents = self._parents(self.population_size)
                return algorithms.varAnd(parents, self.toolbox, self.crossover_prob,
                                         self.mutation_prob)
            return algorithms.varOr(self.population, self.toolbox, self.offspring_count,
                                    self.crossover_prob, self.mutation_prob)

    def _parents(self, k):
        """``k`` parents chosen from the population (call inside :meth:`_own_random`)."""
        return self.toolbox.select(self.population, k)

    def _survivors(self):
        if self.strategy == "simple" or not self.population:
            return self.offspring
        with self._own_random():
            return self.toolbox.select(self.population + self.offspring, self.population_size)

    # --- operators --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _own_random(self):
        """Run DEAP (which uses the global ``random``) on this GA's own generator state."""
        outside = random.getstate()
        random.setstate(self.random_state)
        try:
            yield
        finally:
            self.random_state = random.getstate()
            random.setstate(outside)

    def _mate(self, first, second, indpb):
        """DEAP's uniform crossover, each child then made a point of the space (:meth:`_repair`)."""
        from deap import tools

        tools.cxUniform(first, second, indpb)
        return self._repair(first), self._repair(second)

    def _mutate(self, individual, indpb):
        """Mutation by type of each set gene (an inactive one, ``None``, is left out)."""
        for i, param in enumerate(self.space.free):
            if individual[i] is not None and random.random() < indpb:
                individual[i] = mutate_gene(param, individual[i])
        return (self._repair(individual),)

    def _repair(self, individual):
        """Make a bred individual's genes a point of a conditional space: the genes of
        parameters inactive in it are unset (``None``), so they never leak into a point and
        two children that differ only there are one point; a parameter that crossover or
        mutation made active without a value (its parent's value came from the other
        parent) gets one drawn at random."""
        if not self.space.conditional:
            return individual
        free = self.space.free
        point = self.space.complete({p.name: gene for p, gene in zip(free, individual)
                                     if gene is not None}, lambda p: p.sample(self.rng))
        individual[:] = [point.get(p.name) for p in free]
        return individual


class SteadyStateGA(GA):
    """Steady-state GA: one child per free worker, no waiting for generations.

    Each child comes from two tournament-selected parents (crossover with ``crossover_prob``,
    then mutation with ``mutation_prob``, retried until it is a point not yet evaluated); each
    result enters the population in place of its worst member when it is better. With
    ``generations`` set, it proposes ``population_size * generations`` points in all.
    ``strategy`` and ``offspring_proportion`` do not apply.
    """

    groups = GA.groups + ("starters",)
    counters = GA.counters + ("proposed",)
    starters = None   # initial individuals still to propose (a list from the first ask on)
    proposed = 0      # points proposed so far

    def ask(self, n):
        if self.starters is None:
            self.starters = self._starters()
        points = []
        while len(points) < n and not self.done():
            individual = self._candidate()
            if individual is None:
                break
            points.append(self.space.point(individual))
            self.proposed += 1
        return points

    def done(self):
        return self.stalled or (self.generations is not None and
                                self.proposed >= self.population_size * self.generations)

    def _starters(self):
        """Initial individuals to fill the population: the population file, then random."""
        missing = self.population_size - len(self.population)
        seeds = self.seeds[:missing]
        randoms = self.space.sample(self.rng, missing - len(seeds))
        return [self._individual(p) for p in seeds + randoms]

    def _candidate(self):
        """The next individual to evaluate, or None when none new can be made."""
        while not self.stalled:
            if self.starters:
                individual = self.starters.pop(0)
            elif len(self.population) >= 2:
                individual = self._child()
            else:
                individual = self._individual(self.space.sample(self.rng)[0])
            if not self._reuse_or_wait(individual, point_key(self._point(individual))):
                self.stale = 0
                return individual
            self.stale += 1
        return None

    def _child(self):
        from deap import algorithms

        with self._own_random():
            parents = self._parents(2)
            child = algorithms.varAnd(parents, self.toolbox, self.crossover_prob,
                                      self.mutation_prob)[0]
            if child.fitness.valid:
                child, = self.toolbox.mutate(child)
                del child.fitness.values
        return child

    def _settle(self, individual, asked):
        """Every result (asked for or not) replaces the worst member when it is better."""
        if len(self.population) < self.population_size:
            self.population.append(individual)
            return
        worst = max(range(len(self.population)),
                    key=lambda i: self.population[i].fitness.values[0])
        if individual.fitness.values[0] < self.population[worst].fitness.values[0]:
            self.population[worst] = individual


def mutate_gene(param, value):
    """Supervisor's mutation of one gene by type (draws from ``random``)."""
    if isinstance(param, Logical):
        return not value
    if isinstance(param, Ordered):
        sigma = param.sigma or max(len(param.values) / 10, 1.0)
        position = round(param.index(value) + random.gauss(0, sigma))
        return param.values[min(max(position, 0), len(param.values) - 1)]
    if isinstance(param, Categorical):
        others = [v for i, v in enumerate(param.values) if i != param.index(value)]
        return random.choice(others) if others else value
    if param.log:
        lower, upper = math.log10(param.lower), math.log10(param.upper)
        sigma = param.sigma or (upper - lower) / 10
        mutated = 10 ** min(max(math.log10(value) + random.gauss(0, sigma), lower), upper)
    else:
        sigma = param.sigma or (param.upper - param.lower) / 10
        mutated = value + random.gauss(0, sigma)
    mutated = min(max(mutated, param.lower), param.upper)
    return int(min(max(round(mutated), param.lower), param.upper)) if param.kind == "int" \
        else float(mutated)


def read_population(path, space):
    """Initial individuals: Supervisor's CSV (header of parameter names) or JSON lines.

    In a CSV row of a conditional space, an inactive parameter's cell may be empty; a value
    it holds is left out of the point."""
    if path.suffix.lower() != ".csv":
        return read_upf(path, space)
    try:
        with open(path, newline="") as handle:
            rows = list(csv.reader(handle))
    except OSError as exc:
        raise ConfigError(str(path), "the population file must be readable",
                          exc.strerror) from None
    if not rows:
        raise ConfigError(str(path), "the population file must have a header row", "")
    header = [name.strip() for name in rows[0]]
    missing = [p.name for p in space.free if p.name not in header]
    if missing:
        raise ConfigError(f"{path}:1", "the header must name every free parameter "
                          f"({', '.join(p.name for p in space.free)})", missing)
    points = []
    for number, row in enumerate(rows[1:], 2):
        if not any(cell.strip() for cell in row):
            continue
        cells = dict(zip(header, (cell.strip() for cell in row)))
        values = {}
        for param in space.free:
            if not cells.get(param.name):
                continue   # an inactive parameter's empty cell (an active one's is refused)
            try:
                values[param.name] = param.parse(cells[param.name])
            except ValueError as exc:
                raise ConfigError(f"{path}:{number}", f"column {param.name}: {exc}",
                                  cells.get(param.name)) from None
        points.append(space.complete(values, lambda param: _empty(param, f"{path}:{number}")))
    return points


def _empty(param, where):
    """Refuse the empty cell of a parameter active in its row."""
    raise ConfigError(where, f"column {param.name}: must have a value (empty only where the "
                      f"parameter is inactive)", "")
