"""How big each part of the suite is: ``full`` (the sizes of issue 6), ``reduced``, ``smoke``.

``full`` is what the project's claims rest on; ``reduced`` keeps every contender and every
problem but fewer seeds and a smaller quality budget, to fit in about 20 minutes on 2 cores;
``smoke`` runs every part with tiny sizes in a few seconds, so CI keeps the suite working.
"""

from dataclasses import dataclass, replace

from .bayesmark_tasks import TASKS
from .lc_tables import DATASETS as TABLES
from .lc_tables import TASKS as TABLE_TASKS

OURS = ("random", "ga", "gp", "optuna", "mbo")
QUALITY_OURS = ("random", "gp", "mbo")      # random is also the random peer
PEERS = ("optuna TPE", "optuna GP", "skopt gp_minimize", "skopt forest_minimize")
MO_OURS = ("nsga2", "nsga3", "gp", "mbo")
MO_PEERS = ("optuna NSGA-II", "optuna MO TPE", "optuna MO GP", "random")
MO_PROBLEMS = ("zdt1", "zdt2", "zdt3", "dtlz2", "digits")
CONDITIONAL_OURS = ("random", "ga", "gp", "mbo", "bohb", "optuna")
CONDITIONAL_PEERS = ("optuna TPE define-by-run", "SMAC3")
PEERS_OURS = ("auto", "random", "gp", "mbo", "optuna", "ga")   # auto: the default
PEERS_PEERS = ("optuna TPE", "optuna GP", "optuna CMA-ES", "SMAC3 HPO", "SMAC3 MF", "DEHB",
               "HEBO", "DeepHyper CBO", "syne-tune ASHA", "syne-tune MOBSTER",
               "syne-tune Hyper-Tune", "syne-tune DyHPO", "syne-tune BO")
PROBLEMS = ("branin", "hartmann6", "ackley5", "rosenbrock4", "levy6", "digits")


@dataclass(frozen=True)
class Sizes:
    """Every size the parts read."""

    name: str
    # part 1: dispatch overhead
    dispatch_tasks: int = 20_000
    dispatch_repeats: int = 5
    dispatch_pingpongs: int = 10_000
    # part 2: worker utilization (real MPI ranks that sleep)
    utilization_workers: int = 16
    utilization_tasks: int = 400
    utilization_algorithms: tuple = ("random", "ga", "gp", "mbo")
    utilization_max_time: float = 120.0
    # part 3: search quality
    quality_seeds: int = 10
    quality_budget: int = 100
    quality_problems: tuple = PROBLEMS
    quality_ours: tuple = QUALITY_OURS
    quality_peers: tuple = PEERS
    quality_modes: tuple = ("sequential", "batch", "async")
    quality_workers: int = 8          # the batch size, and the simulated async workers
    quality_digits_epochs: int | None = None   # None: the space's own (30)
    # part 4: algorithm overhead
    overhead_observations: tuple = (50, 200, 1000)
    overhead_repeats: int = 3
    overhead_algorithms: tuple = OURS
    # part 5: scale by simulation
    simulation_workers: tuple = (64, 256, 1024, 4096)
    simulation_tasks_per_worker: int = 10
    simulation_task_means: tuple = (10.0, 3600.0)
    # part 6: faults (real studies, killed and resumed)
    faults_kills: int = 20
    faults_kill_budget: int = 120
    faults_budget: int = 10
    # part 7: the study as a service, on zmq and PostgreSQL, with EQ-SQL's per-task path
    service_tasks: int = 2000
    service_slots: int = 32           # slots per worker: 2 pools hold 128 tasks at most
    service_repeats: int = 3          # runs of each contender, in turn: the median counts
    # part 9: packing evaluations of mixed sizes, by simulation (issue 35)
    packing_slots: int = 1024
    packing_slots_per_node: int = 8
    packing_sizes: tuple = (1, 2, 4, 8)
    packing_tasks_per_slot: int = 20
    # part 10: launching evaluations of several ranks (the first must be 1: the reference)
    launch_ranks: tuple = (1, 2, 4)
    launch_repeats: int = 10
    # part 11: learning curves and pruning (simulated async workers; issue 33)
    fidelity_seeds: int = 10
    fidelity_budget: int = 60         # epochs: as many as this many whole runs train
    fidelity_sequential: tuple = ("pow3",)   # also on 1 worker: the measured fact
    fidelity_pool_points: int = 150   # a real pool's utilization (0: not measured)
    fidelity_problems: tuple = ("exp3", "pow3", "pow6", "digits", "keras",
                                *(f"lc-{name}" for name in TABLES))
    fidelity_contenders: tuple = (
        "random", "random + asha", "random + hyperband", "tpe", "tpe + median", "tpe + asha",
        "tpe + hyperband", "bohb + hyperband", "optuna TPE + MedianPruner",
        "optuna TPE + SuccessiveHalvingPruner", "optuna TPE + HyperbandPruner")
    fidelity_workers: int = 8
    fidelity_epochs: int | None = None   # None: each problem's own (27; keras 9)
    # part 12: multi-objective search quality (issue 34)
    mo_seeds: int = 10
    mo_budget: int = 200              # the analytic problems
    mo_digits_budget: int = 100
    mo_problems: tuple = MO_PROBLEMS
    mo_ours: tuple = MO_OURS
    mo_peers: tuple = MO_PEERS
    mo_modes: tuple = ("sequential", "async")
    mo_workers: int = 8
    mo_digits_epochs: int | None = 10     # the space's own 30 cost 3x the CPU (0.15 s a fit)
    # part 13: population-based training on the PBT paper's toy problem and digits (issue 48)
    pbt_seeds: int = 10
    pbt_population: int = 8
    pbt_steps: int = 40
    pbt_interval: int = 4
    pbt_problems: tuple = ("toy", "digits")
    pbt_digits_epochs: int = 20
    pbt_pool_workers: int = 8         # a real mpiexec pool's utilization (0: not measured)
    pbt_pool_members_per_worker: int = 32   # its population: the drain's share small
    pbt_pool_repeats: int = 3         # its studies, each its own draw of the segments' times
    pbt_ray: tuple = ("ray pbt", "ray pb2")   # Ray Tune's, in a virtualenv of its own
    # part 14: conditional spaces against their flattened selves (issue 49)
    conditional_seeds: int = 10
    conditional_budget: int = 40
    conditional_problems: tuple = ("branches", "models")
    conditional_ours: tuple = CONDITIONAL_OURS
    conditional_peers: tuple = CONDITIONAL_PEERS
    # part 15: the field's optimizers on Bayesmark's tasks (issue 45)
    peers_seeds: int = 10
    peers_rounds: int = 16
    peers_batch: int = 8              # Bayesmark's: 16 rounds of 8 suggestions
    peers_tasks: tuple = TASKS + TABLE_TASKS
    peers_ours: tuple = PEERS_OURS
    peers_peers: tuple = PEERS_PEERS
    peers_modes: tuple = ("batch", "sequential", "async")
    peers_sequential_budget: int = 40


FULL = Sizes("full")
REDUCED = replace(FULL, name="reduced", dispatch_tasks=5_000, quality_seeds=10,
                  quality_budget=50, utilization_max_time=60.0,
                  fidelity_problems=("exp3", "pow3", "pow6", "digits",   # Keras: CPU hours
                                     "lc-breast", "lc-diabetes"),
                  fidelity_budget=20,
                  mo_seeds=5, mo_ours=("nsga2", "nsga3"), mo_digits_budget=30,
                  mo_digits_epochs=5, peers_seeds=2, peers_modes=("batch", "async"),
                  pbt_population=4, pbt_steps=8, pbt_interval=2, pbt_problems=("toy",),
                  pbt_ray=("ray pbt",),   # Ray Tune: minutes a fit on a busy machine
                  peers_tasks=("SVM-iris-acc", "DT-breast-acc", "DT-digits-acc",
                               "lasso-wine-acc", "linear-diabetes-mse", "lc-breast",
                               "lc-diabetes"))
SMOKE = Sizes("smoke", dispatch_tasks=300, dispatch_repeats=1, dispatch_pingpongs=200,
              utilization_workers=3, utilization_tasks=12, utilization_algorithms=("random",),
              utilization_max_time=30.0, quality_seeds=2, quality_budget=6,
              quality_problems=("branin", "digits"), quality_ours=("random",),
              quality_peers=("optuna TPE",), quality_workers=4, quality_digits_epochs=2,
              overhead_observations=(5, 10),
              overhead_repeats=1, overhead_algorithms=("random",), simulation_workers=(8,),
              simulation_tasks_per_worker=3, faults_kills=2, faults_kill_budget=16,
              faults_budget=6, service_tasks=200,
              service_slots=4, service_repeats=1, packing_slots=32, packing_tasks_per_slot=3,
              launch_ranks=(1, 2), launch_repeats=1, fidelity_seeds=2, fidelity_budget=4,
              fidelity_problems=("pow3", "digits", "lc-wine"),
              fidelity_contenders=("random", "random + asha", "tpe + hyperband",
                                   "bohb + hyperband", "optuna TPE + HyperbandPruner"),
              fidelity_workers=3, fidelity_epochs=3, fidelity_sequential=("pow3",),
              fidelity_pool_points=6,
              mo_seeds=2, mo_budget=8, mo_digits_budget=4,
              mo_problems=("zdt1", "dtlz2", "digits"), mo_ours=("mbo",),
              mo_peers=("optuna MO TPE", "random"), mo_workers=3, mo_digits_epochs=2,
              pbt_seeds=2, pbt_population=4, pbt_steps=8, pbt_interval=2,
              conditional_seeds=2, conditional_budget=6, conditional_ours=("random", "mbo"),
              pbt_digits_epochs=4, pbt_pool_workers=2, pbt_pool_members_per_worker=2,
              pbt_pool_repeats=1,
              pbt_ray=(),   # Ray Tune: minutes a fit (benchmarks/tests runs it apart)
              peers_seeds=1, peers_rounds=2, peers_batch=4, peers_sequential_budget=4,
              peers_modes=("batch", "sequential", "async"),
              peers_ours=("random", "auto"),   # async: an mpiexec pool a run, seconds each
              peers_tasks=("SVM-iris-acc", "linear-diabetes-mse", "lc-wine"))
SIZES = {sizes.name: sizes for sizes in (FULL, REDUCED, SMOKE)}
