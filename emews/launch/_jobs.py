"""The batch jobs of a study and their state as the scheduler tells it (``emews status``).

:func:`states` asks the scheduler with its own query command (:data:`QUERIES`), keeping its
names of the states: psij-python's ``attach`` folds them into its own few and reports a job
that has left the queue as COMPLETED, however it ended. Flux has no query: its jobs are UNKNOWN.
"""

import shutil
import subprocess
from pathlib import Path


JOBS = "submit"              # the store's meta key
JOBS_FILE = "submit.json"    # its export in the experiment directory
QUERY_TIMEOUT = 30  # seconds a scheduler's query command may take
UNKNOWN = "UNKNOWN"
PBS_STATES = {"B": "BEGUN", "E": "EXITING", "F": "FINISHED", "H": "HELD", "M": "MOVED",
              "Q": "QUEUED", "R": "RUNNING", "S": "SUSPENDED", "T": "TRANSIT",
              "U": "USER_SUSPENDED", "W": "WAITING", "X": "EXPIRED"}


class QueryFailed(Exception):
    """The scheduler could not be asked (its command is missing, fails or does not answer)."""


def states(record):
    """The jobs of ``record`` (what ``emews submit`` recorded in the study's store; ``None``:
    none), each ``{"id", "kind", "state"}`` (``kind``: ``study`` or ``pool``), and one line that
    says why their states are unknown (``None`` when the scheduler answered)."""
    record = record or {}
    scheduler = record.get("site", {}).get("scheduler", "local")
    jobs = [{"id": str(entry["id"]), "kind": entry.get("kind", "study")}
            for entry in record.get("jobs", [])]
    if not jobs:
        return [], None
    found, note = {}, f"emews status cannot ask {scheduler} for job states"
    if scheduler in QUERIES:
        try:
            found, note = QUERIES[scheduler]([job["id"] for job in jobs]), None
        except QueryFailed as exc:
            note = f"cannot ask {scheduler} for the states of the jobs: {exc}"
    for job in jobs:
        job["state"] = found.get(job["id"], UNKNOWN)
    return jobs, note


def _run(command, unknown):
    """The standard output of a scheduler's query ``command`` (a list); an error that has
    ``unknown`` in it says that some job is unknown (no longer held): not a failure."""
    if shutil.which(command[0]) is None:
        raise QueryFailed(f"{command[0]} is not on PATH (run emews status where the jobs were "
                          "submitted)")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=QUERY_TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise QueryFailed(f"{command[0]} did not answer within {QUERY_TIMEOUT} s") from None
    if done.returncode and unknown not in done.stderr:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        raise QueryFailed(f"{command[0]} failed: {lines[-1].strip()}")
    return done.stdout


def slurm_states(ids):
    """Slurm's state of each job: squeue's while the controller holds the job, else sacct's
    (when accounting is on), else :data:`UNKNOWN`."""
    found = _pairs(_run(["squeue", "-h", "-t", "all", "-j", ",".join(ids), "-o", "%i %T"],
                        "Invalid job id specified"))
    rest = [i for i in ids if i not in found]
    if rest:
        try:
            found.update(_pairs(_run(["sacct", "-n", "-X", "-P", "-j", ",".join(rest),
                                      "-o", "JobID,State"], "Invalid job id").replace("|", " ")))
        except QueryFailed:
            pass  # no sacct, or no accounting ("Slurm accounting storage is disabled")
    return found


def pbs_states(ids):
    """PBS Pro's state of each job (``qstat -x`` includes finished jobs), by name."""
    by_number = {i.split(".")[0]: i for i in ids}  # qsub printed ID.server; qstat may differ
    found, current = {}, None
    for line in _run(["qstat", "-x", "-f", *ids], "Unknown Job Id").splitlines():
        if line.startswith("Job Id:"):
            current = by_number.get(line.split(":", 1)[1].strip().split(".")[0])
        elif current and line.strip().startswith("job_state = "):
            letter = line.split("=", 1)[1].strip()
            found[current] = PBS_STATES.get(letter, letter)
    return found


def lsf_states(ids):
    """LSF's state of each job (``bjobs -a`` includes recently finished jobs)."""
    return _pairs(_run(["bjobs", "-a", "-noheader", "-o", "jobid stat", *ids], "is not found"))


def local_states(ids):
    """RUNNING while the job's script (its process id) runs here, else ENDED."""
    found = {}
    for i in ids:
        try:
            command = Path(f"/proc/{int(i)}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{int(i)}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, ValueError, IndexError):
            found[i] = "ENDED"
            continue
        running = stat not in ("Z", "X") and any(part.endswith(b".sh") for part in command)
        found[i] = "RUNNING" if running else "ENDED"
    return found


def _pairs(text):
    """``{first word: second word}`` of each line with two words or more."""
    return {words[0]: words[1] for words in map(str.split, text.splitlines())
            if len(words) >= 2}


QUERIES = {"slurm": slurm_states, "pbs": pbs_states, "lsf": lsf_states, "local": local_states}
