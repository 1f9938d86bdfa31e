"""Faults injected into real studies, and what each one cost: ``python -m benchmarks faults``.

Every scenario runs ``emews run`` for real (a spawned ``mpiexec`` pool, isolated ``py`` models
from :mod:`benchmarks.fault_models`), injects its fault, resumes where a resume is the remedy,
and then compares the store with the models' own ledger of finished runs:

* **lost**: finished evaluations the study no longer has: a point done before the fault whose
  row changed or vanished, or a run the ledger saw finish whose point has no final row;
* **duplicates**: runs of a point beyond its first finished one (work a fault made us redo);
* **survived**: the study ended with exactly its budget of final rows, or refused the bad
  request with one line and changed nothing.

The table goes to ``benchmarks/results/faults.md`` (``--out`` elsewhere) and into the record.
"""

import collections
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from emews.core._algorithm import point_key

from .common import REPO

MODEL_FAULTS = ("segfault", "exit", "sysexit", "hang", "nan", "garbage", "biglog")
HARMLESS = ("biglog",)  # a model that prints megabytes still trains: its run is done
# Seconds a model may run: a ``hang`` ends here, while a loaded machine's ``ok`` run (0.05 to
# 0.15 s of sleep, plus the fork) stays far below it.
MODEL_TIMEOUT = 5.0
# At least this many evaluations in the full-disk study: the store fills its 150 kB after 10 to
# 12 of them (the count of commits varies), so the smoke size's 16 could finish before it fills.
FULL_DISK_BUDGET = 40
COLUMNS = ("fault", "injected", "survived", "evaluations lost", "duplicates", "note")


class Study:
    """One study of the benchmark in its own directory, run with ``python -m emews``."""

    def __init__(self, root, name, budget, fault="ok", algorithm="random", options=None,
                 system=None, **study):
        self.dir = Path(root) / name
        self.dir.mkdir(parents=True)
        self.ledger = self.dir / "ledger.jsonl"
        self.budget = budget
        self.space = self.dir / "space.json"
        self.write_space(fault)
        tables = {"system": {"procs": 3, "progress_interval": 3600.0, **(system or {})},
                  "study": {"space": "space.json", "budget": budget, "seed": 1,
                            "algorithm": algorithm,
                            "objective": "benchmarks.fault_models:train", **study},
                  "algorithm": options or {}}
        self.config = self.dir / "study.toml"
        self.config.write_text("".join(
            f"[{table}]\n" + "".join(f"{key} = {json.dumps(value)}\n"
                                     for key, value in values.items())
            for table, values in tables.items()))
        self.env = dict({k: v for k, v in os.environ.items() if not k.startswith("PMI")},
                        EMEWS_LEDGER=str(self.ledger),
                        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO),
                                                                 os.environ.get("PYTHONPATH")])))

    def write_space(self, fault="ok", upper=1.0):
        """The space: ``x`` in [-1, upper], and ``fault`` either ``ok`` or the fault."""
        values = ["ok"] if fault == "ok" else ["ok", fault]
        self.space.write_text(json.dumps([
            {"name": "x", "type": "float", "lower": -1.0, "upper": upper},
            {"name": "fault", "type": "categorical", "values": values}]))

    def start(self, *args, preexec_fn=None):
        """``python -m emews ARGS`` in the background."""
        return subprocess.Popen([sys.executable, "-m", "emews", *map(str, args)], cwd=self.dir,
                                env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, start_new_session=True, preexec_fn=preexec_fn)

    def run(self, *args, preexec_fn=None):
        """``python -m emews ARGS`` to the end: ``(exit status, stderr)``."""
        process = self.start(*args, preexec_fn=preexec_fn)
        _, stderr = process.communicate(timeout=900)
        return process.returncode, stderr

    @property
    def expdir(self):
        found = sorted((self.dir / "experiments").glob("*/EXP*"))
        return found[0] if found else None

    def rows(self):
        """Every row of ``evaluations`` (empty before the store exists)."""
        return query(self.expdir, "SELECT id, params, result, status FROM evaluations")

    def meta(self, key):
        rows = query(self.expdir, "SELECT value FROM meta WHERE key=?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def done(self):
        """``{id: (params, result)}`` of the points done so far."""
        return {i: (p, r) for i, p, r, status in self.rows() if status == "done"}

    def tally(self, done_before):
        """``(complete, lost, duplicates)`` against the ledger and the rows done before."""
        rows = self.rows()
        final = {i: (p, r, s) for i, p, r, s in rows if s in ("done", "failed")}
        lost = sum(1 for i, (p, r) in done_before.items() if final.get(i, (0, 0))[:2] != (p, r))
        keys = {point_key(json.loads(p)) for p, _, _ in final.values()}
        ledger = collections.Counter(json.loads(line)["key"] for line in
                                     self.ledger.read_text().splitlines()) \
            if self.ledger.exists() else collections.Counter()
        lost += sum(1 for key in ledger if key not in keys)
        duplicates = sum(count - 1 for count in ledger.values())
        return len(final) == self.budget, lost, duplicates


def query(expdir, sql, args=()):
    """Rows of ``sql`` on ``expdir``'s store, read-only ([] before it exists)."""
    if expdir is None or not (expdir / "results.db").exists():
        return []
    db = sqlite3.connect(f"file:{expdir / 'results.db'}?mode=ro", uri=True, timeout=30)
    try:
        return db.execute(sql, args).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        db.close()


def wait_until(condition, timeout=300):
    """Poll ``condition`` until it holds (a benchmark must not hang: raise after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError("benchmarks.faults: a study did not reach the awaited state")
        time.sleep(0.02)


def row(fault, injected, survived, lost, duplicates, note=""):
    return dict(zip(COLUMNS, (fault, injected, survived, lost, duplicates, note)))


def kill_master(root, kills, budget, seed=0):
    """SIGKILL rank 0 (the master and the ME) at random moments, resuming after each."""
    study = Study(root, "kill-master", budget, algorithm="benchmarks.fault_models:SlowThinker",
                  options={"think": 0.15})
    rng = random.Random(seed)
    process, done_before, thinking, last_pid = study.start("run", study.config), {}, 0, None
    for _ in range(kills):
        wait_until(lambda: (study.meta("master") or {}).get("pid") not in (None, last_pid)
                   or process.poll() is not None)
        if process.poll() is not None:
            break  # the study ended before this kill: the budget was too small for the kills
        time.sleep(rng.uniform(0.1, 1.5))
        last_pid = study.meta("master")["pid"]
        done_before.update(study.done())
        thinking += (study.dir / "thinking").exists()
        os.kill(last_pid, signal.SIGKILL)
        process.wait()
        (study.dir / "thinking").unlink(missing_ok=True)
        process = study.start("run", "--resume", study.expdir)
    process.communicate(timeout=900)
    complete, lost, duplicates = study.tally(done_before)
    return row("kill -9 of the master (random moments)", kills, complete and not
               process.returncode, lost, duplicates, f"{thinking} while the ME was thinking")


def kill_worker(root, budget):
    """SIGKILL one worker rank mid-study, then resume."""
    study = Study(root, "kill-worker", budget)
    process = study.start("run", study.config)
    wait_until(lambda: len(study.done()) >= 2 and list(study.dir.glob("worker-*")))
    done_before = study.done()
    os.kill(int(next(study.dir.glob("worker-*")).name.split("-")[1]), signal.SIGKILL)
    _, stderr = process.communicate(timeout=300)
    said = "resume with: emews run --resume" in stderr
    code, _ = study.run("run", "--resume", study.expdir)
    complete, lost, duplicates = study.tally(done_before)
    return row("kill -9 of a worker rank", 1, complete and said and not code, lost, duplicates,
               "the job ends with one line; resume completes")


def interrupt(root, budget, sig):
    """SIGINT or SIGTERM to ``emews run`` mid-study, then resume."""
    study = Study(root, f"signal-{sig.name}", budget)
    process = study.start("run", study.config)
    wait_until(lambda: len(study.done()) >= 2)
    done_before = study.done()
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=300)
    clean = process.returncode == 128 + sig and "Traceback" not in stderr
    code, _ = study.run("run", "--resume", study.expdir)
    complete, lost, duplicates = study.tally(done_before)
    return row(f"{sig.name} to emews run", 1, clean and complete and not code, lost, duplicates,
               f"exit {process.returncode}, one line")


def model_fault(root, budget, fault):
    """A study in which about half the points' models ``fault``."""
    study = Study(root, f"model-{fault}", budget, fault=fault, timeout=MODEL_TIMEOUT)
    code, _ = study.run("run", study.config)
    rows = study.rows()
    injected = sum(json.loads(p)["fault"] == fault for _, p, _, _ in rows)
    complete, lost, duplicates = study.tally({})
    failed = sum(s == "failed" for _, _, _, s in rows)
    expected = 0 if fault in HARMLESS else injected
    return row(f"model: {fault}", injected, complete and code in (0, 1) and failed == expected,
               lost, duplicates, f"{failed} failed with their reason")


def double_resume(root, budget):
    """A second ``--resume`` while the study runs."""
    study = Study(root, "double-resume", budget,
                  algorithm="benchmarks.fault_models:SlowThinker", options={"think": 0.5})
    process = study.start("run", study.config)
    wait_until(lambda: len(study.done()) >= 1)
    code, stderr = study.run("run", "--resume", study.expdir)
    process.communicate(timeout=300)
    complete, lost, duplicates = study.tally({})
    refused = code == 2 and "in use by a live run" in stderr
    return row("a second resume of a live study", 1, refused and complete and
               not process.returncode, lost, duplicates, "refused, exit 2")


def changed_resume(root, budget):
    """A resume after the search space changed."""
    study = Study(root, "changed-resume", budget)
    study.run("run", study.config)
    before = study.rows()
    study.write_space(upper=5.0)
    code, stderr = study.run("run", "--resume", study.expdir, "--budget", budget * 2)
    complete, lost, duplicates = study.tally({i: (p, r) for i, p, r, s in before if s == "done"})
    refused = code == 2 and len(stderr.strip().splitlines()) == 1
    return row("a resume with a changed space", 1, refused and study.rows() == before, lost,
               duplicates, "refused, exit 2, rows unchanged")


def full_disk(root, budget):
    """``RLIMIT_FSIZE`` stops the store growing mid-study; then resume without it.

    The pool is in-process: MPICH's shared-memory transport cannot start under the limit.
    """
    study = Study(root, "full-disk", budget, system={"pool": "inprocess"})
    limit = 150_000

    def small_disk():
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    code, stderr = study.run("run", study.config, preexec_fn=small_disk)
    done_before = study.done()
    said = code != 0 and "results.db: cannot" in stderr
    code, _ = study.run("run", "--resume", study.expdir)
    complete, lost, duplicates = study.tally(done_before)
    return row("a full disk (RLIMIT_FSIZE)", 1, said and complete and not code, lost, duplicates,
               f"{len(done_before)} stored before it filled")


def corrupt_store(root, budget):
    """Garbage written over a finished study's store, then a resume."""
    study = Study(root, "corrupt-store", budget)
    study.run("run", study.config)
    path = study.expdir / "results.db"
    data = bytearray(path.read_bytes())
    data[:100] = b"\0" * 100
    path.write_bytes(bytes(data))
    code, stderr = study.run("run", "--resume", study.expdir)
    untouched = path.read_bytes() == bytes(data)
    said = code != 0 and len(stderr.strip().splitlines()) == 1 and "results.db" in stderr
    return row("a corrupt results.db", 1, said and untouched, 0, 0,
               "one line; the file is left as it was")


def run(sizes, out=None):
    """Every scenario; writes ``faults.md``; returns the rows."""
    kills, budget = sizes.faults_kills, sizes.faults_budget
    with tempfile.TemporaryDirectory(prefix="emews-faults-") as root:
        rows = [kill_master(root, kills, sizes.faults_kill_budget),
                kill_worker(root, budget), interrupt(root, budget, signal.SIGINT),
                interrupt(root, budget, signal.SIGTERM)]
        rows += [model_fault(root, budget, fault) for fault in MODEL_FAULTS]
        rows += [double_resume(root, budget), changed_resume(root, budget),
                 full_disk(root, max(sizes.faults_kill_budget, FULL_DISK_BUDGET)),
                 corrupt_store(root, budget)]
    table = markdown(rows, sizes)
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(table + "\n")
    print(table, flush=True)
    return {"rows": rows}


def markdown(rows, sizes):
    """The table of faults, with when, where and from which commit it was measured."""
    from .report import machine, versions

    m, v = machine(), versions()
    lines = ["# Faults injected into real studies (`python -m benchmarks faults`)", "",
             f"Run of {time.strftime('%Y-%m-%d %H:%M %z')} on `{m['host']}` ({m['cores']} "
             f"cores), size `{sizes.name}`, emews at `{v['emews_commit']}`. Every row must "
             "show 0 lost; see `benchmarks/README.md` (part 6) for what each column counts.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join("yes" if value is True else "NO" if value is False else
                                str(value) for value in r.values()) + " |" for r in rows]
    return "\n".join(lines)
