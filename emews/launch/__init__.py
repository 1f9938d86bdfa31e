"""Sites and batch jobs: run a study on a machine chosen by name.

::

    sites/NAME.toml  (or a path, or ~/.config/emews/sites/NAME.toml)
         |  site.load(): validated Site (scheduler, launcher, environment, GPUs, langs-app)
         v
    emews submit CONFIG --site NAME
         |  submit.submit(): prepare_run() -> EXPDIR (lock released before the job starts)
         |  script.render(): EXPDIR/job-K.sh = directives + the site's environment
         |                   + <launcher> -n PROCS python -m emews run --resume EXPDIR
         v
    psij-python JobExecutor(scheduler): a batch job that runs ``bash EXPDIR/job-K.sh``
         |  (--chain N: N more jobs, each depending on the one before)
         v
    the study's store (meta "submit", exported to EXPDIR/submit.json): job ids, scripts,
         |  the scheduler's output files
         |  jobs.states(): each job's state, asked of the scheduler (squeue/sacct, qstat, bjobs)
         v
    emews status EXPDIR: one line per job (id, study or pool, state)

``emews site import SUPERVISOR_DIR/workflows/common/sh NAME`` writes a site file from
CANDLE/Supervisor's ``env-NAME.sh``, ``sched-NAME.sh`` and ``langs-app-NAME.sh``
(:mod:`emews.launch._importer`).
"""

from ._site import Site, find, load, shipped_sites

__all__ = ["Site", "find", "load", "shipped_sites"]
