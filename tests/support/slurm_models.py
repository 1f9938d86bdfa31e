"""Objectives for studies run in Slurm jobs (tests/test_sites_slurm.py)."""

import os
import time


def job_square(params):
    """Train for ``EMEWS_TEST_SECONDS`` (3 by default); return x squared as ``val_loss`` and
    the id of the Slurm job that ran it as the metric ``slurm_job``."""
    time.sleep(float(os.environ.get("EMEWS_TEST_SECONDS", "3")))
    return {"val_loss": params["x"] ** 2, "slurm_job": int(os.environ["SLURM_JOB_ID"])}
