"""NSGA-II and NSGA-III on DEAP: the generational ``ga`` and the steady-state ``ga_async`` with
Pareto selection, for several objectives and constraints.

Both are :class:`~emews.algorithms.ga.GA` with two steps replaced; everything else (handing a
generation out through ``ask`` and waiting for it, the operators by parameter type, immigrants,
never sending a point out twice, the seeded generator, ``state()``) is the GA's::

    tell --> fitness: every objective (to minimize) + the total violation of the constraints
    generation complete --> survivors = NSGA selection (population + offspring, population_size)
                        --> parents   = tournaments on (front, crowding distance)
                        --> children  = varAnd (uniform crossover, mutation by type)

* ``nsga2`` selects survivors with DEAP's ``selNSGA2`` (non-dominated fronts, then the crowding
  distance on the last front); parents win binary tournaments (``tournament_size`` 2) on the
  front first, the crowding distance second, as Deb et al. (2002).
* ``nsga3`` selects survivors with DEAP's ``selNSGA3`` (non-dominated fronts, then niches around
  reference points on the normalized last front); the reference points are DEAP's
  ``uniform_reference_points`` with ``reference_divisions`` divisions of each objective (by
  default the most that give no more points than ``population_size``). Parents win tournaments
  on the front alone (NSGA-III keeps diversity in its selection, not in its mating).
* **Constrained domination** (Deb's rule): a feasible point dominates an infeasible one; of two
  infeasible points the one with the smaller total violation (the sum of how far each
  constraint is broken) dominates; two feasible points (or two with the same violation) by
  Pareto dominance. So infeasible points are never on the first front while a feasible one is
  in the population, and the search is led back towards feasibility when none is.
* A failed evaluation (``NaN``, any non-finite objective, or a value that does not carry one
  number per objective) is worse than any other: selection takes failures only when there are
  not enough others to fill the population.
* With one objective (a study of one, constrained or not) both are a (mu + lambda) GA with
  constrained selection.
* ``nsga2_async`` and ``nsga3_async`` are the steady-state forms: ``ga_async`` (a child of two
  tournament winners for every free worker, no waiting for generations) with these parts, and
  their own ``_settle``: each result joins the population, and once it is over
  ``population_size`` NSGA selection cuts it back::

      ask  --> parents = tournaments on (front, crowding) --> child (varAnd) --> point out
      tell --> population + the result --> NSGA selection of population_size

Settings (Supervisor's GA names in brackets, as ``ga``): ``population_size``
[POPULATION_SIZE] (20), ``generations`` [NUM_ITERATIONS] (unlimited), ``offspring_proportion``
[OFFSPRING_PROPORTION] (1.0: as many children as parents each generation, Deb's lambda = mu),
``crossover_prob`` [CX_PROB] (0.9) and ``mutation_prob`` [MUT_PROB] (1.0), each child made by
crossover and then mutation with those probabilities (DEAP's ``varAnd``),
``crossover_indpb`` [CX_INDPB] (0.5), ``mutation_indpb`` [MUT_INDPB] (one over the number of
free parameters), ``tournament_size`` [TOURNSIZE] (2), ``population_file``; ``nsga3`` also
takes ``reference_divisions``. ``objectives`` is set by the study (the number of objectives).

``selNSGA3`` shuffles with NumPy's global generator; ``nsga3`` swaps its own NumPy state in
around DEAP's calls as the GA does Python's, and saves it in ``state()``.
"""

import contextlib
import functools
import math

import numpy as np

from emews.plugin import check_number

from .ga import GA, SteadyStateGA


class NSGA2(GA):
    """NSGA-II on ask/tell: the generational GA with non-dominated sorting and crowding."""

    multiobjective = True
    crowding = True   # tournaments look at the crowding distance after the front

    def __init__(self, space, seed=None, objectives=1, population_size=20, generations=None,
                 offspring_proportion=1.0, mutation_prob=1.0, crossover_prob=0.9,
                 mutation_indpb=None, crossover_indpb=0.5, tournament_size=2,
                 population_file=None):
        self.objectives = check_number("objectives", objectives, 1, integer=True)
        if mutation_indpb is None:
            mutation_indpb = 1.0 / max(len(space.free), 1)
        # breeding as the GA's "simple" strategy (varAnd on chosen parents); survivors below
        super().__init__(space, seed, population_size=population_size,
                         generations=generations, strategy="simple",
                         offspring_proportion=offspring_proportion,
                         mutation_prob=mutation_prob, crossover_prob=crossover_prob,
                         mutation_indpb=mutation_indpb, crossover_indpb=crossover_indpb,
                         tournament_size=tournament_size, population_file=population_file)
        from deap import tools

        self.toolbox.register("select", tools.selTournament, tournsize=tournament_size,
                              fit_attr="fitness.crowded")

    # --- fitness ----------------------------------------------------------------------------

    def _individual_class(self):
        return pareto_individual(self.objectives)

    def _record(self, value):
        """Every objective, then the total violation; a failure: ``inf`` everywhere."""
        values = getattr(value, "values", (value,))
        violations = getattr(value, "violations", ())
        if len(values) != self.objectives or not all(map(math.isfinite, values)) or \
                any(math.isnan(v) for v in violations):
            return (math.inf,) * (self.objectives + 1)
        return tuple(map(float, values)) + (float(sum(max(v, 0.0) for v in violations)),)

    def _assign(self, individual, record):
        individual.fitness.values = record[:-1]
        individual.fitness.violation = record[-1]

    def _record_of(self, individual):
        fitness = individual.fitness
        return fitness.values + (fitness.violation,) if fitness.valid else ()

    def _best(self, individuals, k):
        with self._own_random():
            return self._select(individuals, k)

    # --- generations ------------------------------------------------------------------------

    def _breed(self):
        from deap import algorithms

        self.population += self.immigrants
        self.immigrants = []
        with self._own_random():
            return algorithms.varAnd(self._parents(self.offspring_count), self.toolbox,
                                     self.crossover_prob, self.mutation_prob)

    def _parents(self, k):
        """``k`` parents by tournaments on front and crowding (call inside ``_own_random``)."""
        self._rank(self.population)
        return super()._parents(k)

    def _survivors(self):
        return self._cut(self.population + self.offspring)

    def _cut(self, individuals):
        """The ``population_size`` of ``individuals`` that NSGA selection keeps."""
        with self._own_random():
            return self._select(individuals, self.population_size)

    def _select(self, individuals, k):
        """NSGA selection of ``k`` individuals; failures only where too few others are left."""
        usable = [i for i in individuals if math.isfinite(i.fitness.violation)]
        failed = [i for i in individuals if not math.isfinite(i.fitness.violation)]
        chosen = self._nsga(usable, min(k, len(usable))) if usable and k else []
        return chosen + failed[:k - len(chosen)]

    def _nsga(self, individuals, k):
        from deap import tools

        return tools.selNSGA2(individuals, k)

    def _rank(self, population):
        """Mark each individual's tournament key ``fitness.crowded``: its front (the first is
        best) and, for NSGA-II, its crowding distance within the front (larger is better)."""
        from deap.tools.emo import assignCrowdingDist, sortNondominated

        for rank, front in enumerate(sortNondominated(population, len(population))):
            if self.crowding:
                assignCrowdingDist(front)
            for individual in front:
                individual.fitness.crowded = (-rank, individual.fitness.crowding_dist
                                              if self.crowding else 0.0)


class NSGA3(NSGA2):
    """NSGA-III on ask/tell: non-dominated sorting and niching around reference points."""

    crowding = False

    def __init__(self, space, seed=None, objectives=1, population_size=20, generations=None,
                 offspring_proportion=1.0, mutation_prob=1.0, crossover_prob=0.9,
                 mutation_indpb=None, crossover_indpb=0.5, tournament_size=2,
                 population_file=None, reference_divisions=None):
        super().__init__(space, seed, objectives=objectives, population_size=population_size,
                         generations=generations, offspring_proportion=offspring_proportion,
                         mutation_prob=mutation_prob, crossover_prob=crossover_prob,
                         mutation_indpb=mutation_indpb, crossover_indpb=crossover_indpb,
                         tournament_size=tournament_size, population_file=population_file)
        from deap import tools

        divisions = check_number("reference_divisions", reference_divisions, 1, integer=True,
                                 allow_none=True)
        if divisions is None:
            divisions = default_divisions(self.objectives, self.population_size)
        self.reference_points = tools.uniform_reference_points(self.objectives, divisions)
        self.numpy_state = np.random.RandomState(seed).get_state()

    def _nsga(self, individuals, k):
        from deap import tools

        with np.errstate(all="ignore"):   # a degenerate front normalizes by zero: no matter
            return tools.selNSGA3(individuals, k, self.reference_points, nd="standard")

    @contextlib.contextmanager
    def _own_random(self):
        """The GA's own ``random``, and NumPy's global generator too (``selNSGA3`` uses it)."""
        outside = np.random.get_state()
        np.random.set_state(self.numpy_state)
        try:
            with super()._own_random():
                yield
        finally:
            self.numpy_state = np.random.get_state()
            np.random.set_state(outside)

    def _state_data(self):
        name, keys, position, has_gauss, gauss = self.numpy_state
        return {**super()._state_data(),
                "numpy": [name, keys.tolist(), position, has_gauss, gauss]}

    def _restore_data(self, data):
        super()._restore_data(data)
        name, keys, position, has_gauss, gauss = data["numpy"]
        self.numpy_state = (name, np.array(keys, dtype=np.uint32), position, has_gauss, gauss)


class SteadyStateNSGA2(NSGA2, SteadyStateGA):
    """Steady-state NSGA-II: ``ga_async``'s one child per free worker, NSGA-II's selection.

    A child comes from two parents that win binary tournaments on front and crowding; each
    result (asked for or not) joins the population, and once the population is over
    ``population_size`` NSGA selection cuts it back (``selNSGA2``: the one dropped is on the
    last front, with the least crowding distance), as Durillo et al. (2009). ``generations``
    caps it at ``population_size * generations`` points; ``offspring_proportion`` does not
    apply.
    """

    def _settle(self, individual, asked):
        self.population.append(individual)
        if len(self.population) > self.population_size:
            self.population = self._cut(self.population)


class SteadyStateNSGA3(NSGA3, SteadyStateNSGA2):
    """Steady-state NSGA-III: as :class:`SteadyStateNSGA2`, cut back with ``selNSGA3`` and
    tournaments on the front alone."""


def default_divisions(objectives, population_size):
    """The most divisions per objective whose reference points are no more than
    ``population_size`` (at least one)."""
    divisions = 1
    while objectives > 1 and math.comb(divisions + objectives, objectives - 1) <= population_size:
        divisions += 1
    return divisions


@functools.cache
def pareto_individual(objectives):
    """DEAP's individual type for ``objectives`` objectives to minimize, with a constrained
    fitness (``violation``: the total violation of the constraints; Deb's domination)."""
    from deap import base, creator

    class ConstrainedFitness(base.Fitness):
        """Fitness with Deb's constrained domination (see the module's docstring)."""

        violation = 0.0

        def dominates(self, other, obj=slice(None)):
            if self.violation != other.violation and max(self.violation, other.violation) > 0:
                return self.violation < other.violation
            return super().dominates(other, obj)

        def __hash__(self):
            return hash((self.wvalues, self.violation))

        def __eq__(self, other):
            return self.wvalues == other.wvalues and self.violation == other.violation

        def __deepcopy__(self, memo):
            copy = super().__deepcopy__(memo)
            copy.violation = self.violation
            return copy

    fitness, individual = f"EmewsParetoFitness{objectives}", f"EmewsParetoIndividual{objectives}"
    if not hasattr(creator, individual):
        creator.create(fitness, ConstrainedFitness, weights=(-1.0,) * objectives)
        creator.create(individual, list, fitness=getattr(creator, fitness))
    return getattr(creator, individual)
