"""Sites and batch jobs: run a study on a machine chosen by name (docs/src/sites.md).

::

    sites/NAME.toml --_site.load()--> Site (scheduler, launcher, environment, GPUs, langs-app)
    emews submit CONFIG --site NAME
        --_submit.submit()--> EXPDIR (prepared; its lock released before the job starts)
        --_script.render()--> EXPDIR/job-K.sh: directives, the site's environment, and
                              <launcher> -n PROCS python -m emews run --resume EXPDIR
        --psij-python--> a batch job (--chain N: N more, each after the one before)
    the store's meta "submit" (and EXPDIR/submit.json): job ids, scripts, output files
        --_jobs.states()--> emews status: one line per job (squeue/sacct, qstat, bjobs)

``emews site import`` writes a site file from CANDLE/Supervisor's files (:mod:`._importer`).
"""

from ._site import Site, find, load, shipped_sites

__all__ = ["Site", "find", "load", "shipped_sites"]
