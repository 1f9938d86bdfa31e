"""The ``emews`` command (also ``python -m emews``).

Each command is a subparser of :func:`parser` (its help says what it does; docs/src/cli.md
holds them all) and a function of this module (``_run``, ``_show``, ...) that :func:`main`
calls; bad input is one ``emews: error:`` line and exit status 2 (:data:`EXIT_BAD_INPUT`).
"""

import argparse
import os
import sys

from ._cli_help import Version, add_examples, complete, print_completion
from ._errors import (ConfigError, EmewsError, FailureAlreadyReported, Interrupted,
                     MEAborted)

EXIT_BAD_INPUT, EXIT_FAILED = 2, 1
LOG_WIDTH = 100_000   # `emews show` into a pipe or a log: no row is wrapped or folded


def parser():
    """The argument parser of the ``emews`` command."""
    top = argparse.ArgumentParser(prog="emews", description="Hyperparameter optimization of "
                                  "deep-learning models, from a laptop to a supercomputer "
                                  "(also python -m emews).")
    top.add_argument("--version", action=Version)
    commands = top.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    run = commands.add_parser("run", help="run (or resume) a study")
    run.add_argument("config", nargs="*", help="TOML files: system and study settings")
    run.add_argument("--resume", metavar="EXPDIR", help="continue the study in EXPDIR")
    run.add_argument("--execute", metavar="EXPDIR", help=argparse.SUPPRESS)  # spawned jobs
    run.add_argument("--no-limit", action="store_true",
                     help="allow a study with no stopping rule (it runs until stopped)")
    run.add_argument("--procs", type=int, help="MPI ranks (master + workers)")
    run.add_argument("--budget", type=int, help="maximum number of evaluations")
    run.add_argument("--seed", type=int)
    run.add_argument("--algorithm", help="registered name or dotted path")
    run.add_argument("--mode", choices=("async", "batch", "sequential"))
    run.add_argument("--impl", help="CANDLE_MODEL_IMPL: py, app, echo, ...")
    run.add_argument("--space", help="search-space file")
    run.add_argument("--name", help="workflow name (the experiment's parent directory)")
    run.add_argument("--data-dir", help="CANDLE_DATA_DIR: where experiments are made")
    run.add_argument("--set", action="append", default=[], metavar="TABLE.KEY=VALUE",
                     help="any setting; VALUE is read as TOML")
    run.add_argument("--supervisor-cfg", nargs=2, metavar=("CFG_SYS", "CFG_PRM"),
                     help="the study of CANDLE/Supervisor's cfg-sys and cfg-prm files (GA, "
                          "mlrMBO, grid, random, uq-noise, async-search), or cfg-sys and UPF "
                          "files (upf); parsed, never run")
    run.add_argument("--dry-run", action="store_true",
                     help="with --supervisor-cfg: print the study as emews TOML, run nothing")
    serve = commands.add_parser("serve", help="run a study as a service that pool jobs attach "
                                "to (emews pool)")
    serve.add_argument("config", nargs="*", help="TOML files: system and study settings")
    serve.add_argument("--resume", metavar="EXPDIR", help="serve the study in EXPDIR again")
    serve.add_argument("--bind", help="interface to listen on (default 127.0.0.1; any other "
                       "needs CURVE keys, made in EXPDIR/keys)")
    serve.add_argument("--port", type=port_number, help="port (default: a free one)")
    serve.add_argument("--lease", type=float, help="seconds a pool holds a task between "
                       "heartbeats (default 60)")
    serve.add_argument("--budget", type=int, help="maximum number of evaluations")
    serve.add_argument("--set", action="append", default=[], metavar="TABLE.KEY=VALUE",
                       help="any setting; VALUE is read as TOML")
    attach = commands.add_parser("pool", help="attach this MPI job's ranks to a served study, "
                                 "or to an EQ-SQL queue with --eqsql (under mpiexec)")
    attach.add_argument("target", help="the served study's experiment directory, the "
                        "service's address tcp://HOST:PORT, or the study's PostgreSQL store "
                        "URL#EXP_ID; with --eqsql, the TOML file of the model that evaluates "
                        "the tasks ([study] objective, impl, ...)")
    attach.add_argument("--eqsql", metavar="URL", help="serve the tasks that EQ-SQL clients "
                        "(eqsql) submit to the PostgreSQL database at URL, until EQ_STOP")
    attach.add_argument("--task-type", type=int, help="with --eqsql: the EQ-SQL task type "
                        "to pop (default 0)")
    attach.add_argument("--key", help="directory holding the pool key pair and the service's "
                        "public key (default: the experiment directory's keys/)")
    attach.add_argument("--workdir", help="where run directories and worker output go when the "
                        "experiment directory is not reachable here (default ./emews-pool)")
    attach.add_argument("--walltime", type=float, help="seconds until this job must end: it "
                        "drains before then")
    attach.add_argument("--give-up", type=float, default=600.0, help="seconds of silence from "
                        "the service after which the pool ends (default 600)")
    for state, verb, text in (("paused", "pause", "hand out no new work (running evaluations "
                                                  "finish)"),
                              ("running", "unpause", "hand out work again"),
                              ("stopped", "stop", "finish what runs, then end the study")):
        steer = commands.add_parser(verb, help=f"{text}, in a running study")
        steer.add_argument("expdir", help="the study's experiment directory, or its "
                           "PostgreSQL store URL#EXP_ID")
        steer.set_defaults(state=state)
    show = commands.add_parser("show", help="print a study's best evaluations (or failures) "
                               "with all their metrics",
                               description="Best first: by the value; in a study of several "
                               "objectives, feasible ones first, by the first objective in its "
                               "direction (--pareto: the front).")
    show.add_argument("expdir")
    show.add_argument("--top", type=_positive_int, default=10,
                      help="how many to print (default 10; CSV and JSON: all)")
    show.add_argument("--failed", action="store_true", help="the failures and their reasons")
    show.add_argument("--pareto", action="store_true", help="the Pareto front (a study of "
                      "several objectives or constraints)")
    show.add_argument("--lineage", action="store_true", help="the segments of a "
                      "population-based study (algorithm pbt): member, parent, donor, steps")
    show.add_argument("--paused", action="store_true", help="the paused runs ([pruner] "
                      "pause): step, value, and the final value their curves predict")
    show.add_argument("--schedule", action="store_true", help="the best member's "
                      "hyperparameters from each step on, as JSON to replay as one training")
    show.add_argument("--where", metavar="FILTER",
                      help='NAME OP VALUE clauses joined by "and", e.g. "lr < 0.01 and '
                           'act == relu" (OP: < <= > >= == !=)')
    show.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    show.add_argument("--json", action="store_true", help="print JSON instead of a table")
    draw = commands.add_parser("plot", help="plot a study's convergence and worker timeline")
    draw.add_argument("expdir")
    draw.add_argument("-o", "--output", help="PNG file (default: EXPDIR/convergence.png)")
    draw.add_argument("--metric", help="plot this metric instead of the objective")
    status = commands.add_parser("status", help="where a study stands (running or finished)")
    status.add_argument("expdir")
    status.add_argument("--json", action="store_true", help="print JSON")
    report = commands.add_parser("report", help="write a self-contained HTML report with "
                                 "figures")
    report.add_argument("expdir")
    report.add_argument("-o", "--output", help="HTML file (default: EXPDIR/report.html)")
    export = commands.add_parser("export", help="export a study to Optuna, CSV or Parquet")
    export.add_argument("expdir")
    export.add_argument("--to", required=True, nargs=2, metavar=("FORMAT", "TARGET"),
                        help="optuna URL (sqlite:///study.db), csv FILE or parquet FILE")
    export.add_argument("--study-name", help="the Optuna study's name (default: EXPDIR's name)")
    board = commands.add_parser("dashboard", help="serve optuna-dashboard on a study while it "
                                "runs (read-only)")
    board.add_argument("paths", nargs="+", metavar="EXPDIR|DATA_DIR/NAME")
    board.add_argument("--port", type=port_number, default=8080,
                       help="0: a free one (default: 8080)")
    board.add_argument("--host", default="127.0.0.1", help="address to listen on (default: "
                       "127.0.0.1); every request needs the printed URL's token")
    supervisor = commands.add_parser("supervisor", help="run a study as CANDLE/Supervisor's "
                                     "supervisor tool or a workflow's workflow.sh does")
    supervisor.add_argument("--workflow", help="the Supervisor workflow (default: "
                            "EMEWS_PROJECT_ROOT's name); options come before the arguments")
    supervisor.add_argument("--dry-run", action="store_true",
                            help="print the study as emews TOML, run nothing")
    supervisor.add_argument("arguments", nargs=argparse.REMAINDER, metavar="ARG",
                            help="SITE WORKFLOW CFG, or workflow.sh's SITE CFG, SITE EXPID "
                                 "CFG_SYS CFG_PRM [MODEL_NAME [CANDLE_MODEL_TYPE CANDLE_IMAGE]]")
    space_import = commands.add_parser("space", help="search-space files").add_subparsers(
        dest="space_command", required=True).add_parser(
        "import", help="print another tool's search space in emews' JSON format")
    space_import.add_argument("--from", dest="source", required=True, choices=("configspace",),
                              help="the format: configspace (ConfigSpace's JSON, with its "
                                   "conditions and forbidden clauses)")
    space_import.add_argument("file", help="the file to read")
    space_import.add_argument("-o", "--output", help="JSON file to write (default: stdout)")
    from .launch._commands import add_parsers

    add_parsers(commands)  # submit, site
    swift_t = commands.add_parser("swift-t", help="build Swift/T with this Python embedded")
    swift_t_build = swift_t.add_subparsers(dest="swift_t_command", required=True) \
        .add_parser("build", help="build STC and Turbine against the system's MPICH; prints "
                    "the PATH entries on its last line")
    swift_t_build.add_argument("--source", metavar="TARBALL|DIR", help="Swift/T's source "
                               "(default: download the pinned release)")
    swift_t_build.add_argument("--prefix", metavar="DIR", help="where to install (default: "
                               "~/.local/share/emews/swift-t-COMMIT-pyX.Y)")
    swift_t_build.add_argument("--no-apt", action="store_true",
                               help="as root too, only name the missing packages")
    completion = commands.add_parser("completion", help="print the shell completion script "
                                     "(bash or zsh) for emews")
    completion.add_argument("shell", choices=("bash", "zsh"))
    add_examples(commands)
    return top


def main(argv=None):
    """Entry point of the ``emews`` console script; returns the exit status."""
    top = parser()
    complete(top)
    args = top.parse_args(argv)
    try:
        from .launch._commands import run_site, run_submit

        return {"run": _run, "serve": _serve, "pool": _pool, "pause": _steer, "unpause": _steer,
                "stop": _steer, "show": _show, "plot": _write, "status": _status,
                "dashboard": _dashboard, "report": _write, "export": _export, "submit": run_submit,
                "site": run_site, "supervisor": _supervisor, "swift-t": _swift_t, "space": _space,
                "completion": print_completion}[args.command](args)
    except Interrupted as exc:
        from .launch._spawn import SPAWNED_VARIABLE

        if not os.environ.get(SPAWNED_VARIABLE):  # the command that spawned the job says it
            print(f"emews: interrupted; {getattr(exc, 'stored', 0)} evaluations stored; resume "
                  f"with: emews run --resume {getattr(exc, 'expdir', '?')}", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("emews: interrupted", file=sys.stderr)
        return 130
    except FailureAlreadyReported as exc:
        return exc.status
    except EmewsError as exc:   # an aborted ME's traceback follows its line
        trace = f"\n{exc.traceback}" if isinstance(exc, MEAborted) else ""
        print(f"emews: error: {exc}{trace}", file=sys.stderr)
        return EXIT_BAD_INPUT if isinstance(exc, ConfigError) else EXIT_FAILED


def _run(args):
    from ._config import command_overrides
    from ._study import execute_prepared, run

    if args.execute:
        result = execute_prepared(args.execute)
        return EXIT_FAILED if result is not None and result.all_failed else 0
    workflow = args.resume and _swift_t_workflow(args.resume)
    if workflow:
        return _resume_swift_t(args, workflow)
    supervisor = _supervisor_study(args) if args.supervisor_cfg or args.dry_run else None
    if supervisor:
        args.config = [supervisor[0]]
    overrides = command_overrides("emews run", args)
    if args.no_limit:
        overrides["study.no_limit"] = True
    if args.dry_run:
        return _print_study(args.supervisor_cfg, *supervisor, overrides)
    result = run(args.config or None, overrides, args.resume)
    if result is not None and result.all_failed:
        from .launch._spawn import SPAWNED_VARIABLE

        if not os.environ.get(SPAWNED_VARIABLE):
            from ._experiment import read_store
            from .inspect._summary import tracebacks

            common = "; ".join(f"{reason} ({count}x)" for reason, count in
                               read_store(result.expdir, lambda store: store.failure_reasons()))
            print(f"emews: error: every evaluation failed ({result.evaluations}); the most "
                  f"common reasons: {common}; tracebacks: {tracebacks(result.expdir)}",
                  file=sys.stderr)
        return EXIT_FAILED
    return 0


def _swift_t_workflow(expdir):
    """The ``workflow.sh`` that ran the study in ``expdir`` under Swift/T (its store's
    ``driver`` row names it), else ``None``."""
    from ._experiment import read_store

    try:
        driver = read_store(expdir, lambda store: store.meta("driver"))
    except EmewsError:
        return None   # not a study: emews run --resume says why
    return driver["workflow"] if driver and driver.get("name") == "swift-t" else None


def _resume_swift_t(args, workflow):
    """``emews run --resume`` of a Swift/T study: ``workflow.sh --resume EXPDIR`` (the site and
    config files it copied into EXPDIR, then this environment, as on its first run)."""
    import subprocess

    from ._config import OPTION_SETTINGS

    options = (*OPTION_SETTINGS, "set", "no_limit", "supervisor_cfg", "dry_run")
    given = [f"--{name.replace('_', '-')}" for name in options
             if getattr(args, name, None) not in (None, [], False)]
    if args.config or given:
        raise ConfigError(f"emews run --resume {args.resume}", "resumes a Swift/T study with "
                          "the settings it ran with (no CONFIG file and no options)",
                          " ".join(args.config + given))
    return subprocess.run(["bash", workflow, "--resume", args.resume], check=False).returncode


def _supervisor_study(args):
    """``--supervisor-cfg``: ``(study, notes)`` of Supervisor's cfg files; the notes are
    printed unless this is a ``--dry-run``."""
    from .supervisor._cfg import read

    if not args.supervisor_cfg or args.config or args.resume:
        raise ConfigError("emews run --supervisor-cfg", "takes CFG_SYS CFG_PRM instead of "
                          "CONFIG files and --resume (--dry-run needs it)", None,
                          show_value=False)
    study, notes = read(*args.supervisor_cfg)
    for note in notes if not args.dry_run else ():
        print(f"emews: note: {note}", file=sys.stderr)
    return study, notes


def _print_study(files, study, notes, overrides):
    """``--dry-run``: print the study as TOML, the command line's settings included."""
    from .supervisor._cfg import render

    for dotted, value in overrides.items():
        table, _, key = dotted.partition(".")
        study.setdefault(table, {})[key] = value
    return _emit(render(study, notes, files))


def _supervisor(args):
    from .supervisor._command import main as supervisor

    return supervisor(args.arguments, args.workflow, args.dry_run)


def _serve(args):
    from ._config import command_overrides
    from ._study import serve

    overrides = command_overrides("emews serve", args)
    result = serve(args.config or None, overrides, args.resume)
    return EXIT_FAILED if result.all_failed else 0


def _pool(args):
    if args.task_type is not None and not args.eqsql:
        raise ConfigError("emews pool --task-type", "selects EQ-SQL tasks: it needs --eqsql "
                          "URL", args.task_type)
    from ._study import pool_job

    if args.eqsql:
        from ._config import load

        reason = pool_job(load([args.target]).as_dict(), args.walltime, workdir=args.workdir,
                          eqsql=args.eqsql, task_type=args.task_type or 0)
    else:
        reason = pool_job(args.target, args.walltime, args.give_up, args.key, args.workdir)
    if reason:
        print(f"emews: pool left: {reason}", flush=True)
    return 0


def _steer(args):
    from .core._control import request

    request(args.expdir, args.state)
    print(f"emews: asked {args.expdir} to be {args.state}")
    return 0


def _integer(rule, lowest, highest=None):
    """An argparse type: an integer from ``lowest`` to ``highest``, else ``rule`` and the text
    given in the error."""
    def integer(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < lowest or (highest is not None and value > highest):
            raise argparse.ArgumentTypeError(f"{rule}, got {text!r}")
        return value

    return integer


port_number = _integer("must be a port number from 0 to 65535", 0, 65535)   # 0: a free one
_positive_int = _integer("must be a positive integer", 1)


class _OneLineParser(argparse.ArgumentParser):
    """A command's parser (and its own commands'): usage errors, unknown arguments included,
    are one ``emews: error:`` line and exit status 2."""

    def error(self, message):
        print(f"emews: error: {self.prog}: {message}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


def _show(args):
    from rich.console import Console

    from .inspect import load, _show as show
    from .inspect._summary import render, summary

    if args.csv and args.json:
        raise ConfigError("emews show", "takes --csv or --json, not both", None,
                          show_value=False)
    study = load(args.expdir)
    console = Console(highlight=False, width=None if sys.stdout.isatty() else LOG_WIDTH)
    if args.schedule:
        return _emit(show.as_json_text(show.schedule(study)))
    if args.lineage or args.paused:
        return _listing(args, study, console)
    if args.pareto and (args.failed or study.pareto is None):
        raise ConfigError("emews show --pareto", "needs a study of several objectives or "
                          "constraints, without --failed", f"{args.expdir} ([study] objectives "
                          f"{list(study.criteria.names)}{', --failed' if args.failed else ''})")
    exported = args.csv or args.json
    rows = show.chosen(study, args.failed, args.where, None if exported else args.top,
                       args.pareto)
    points = show.grouped(study, args.failed)
    if args.csv:
        return _emit(show.csv_text(*show.point_table(rows)) if points else
                     show.as_csv(study, rows))
    if args.json:
        return _emit(show.points_as_json(rows) if points else show.as_json(study, rows))
    if points:
        show.print_points(study, rows, console)
    else:
        show.print_table(study, rows, args.failed, console, args.pareto)
    for line in render(summary(study))[1:]:
        console.print(line, markup=False)
    return 0


def _listing(args, study, console):
    """``emews show --lineage`` or ``--paused``: as CSV, JSON or a table on ``console``."""
    from .inspect import _show as show

    rows = show.paused(study) if args.paused else show.lineage(study)
    if args.csv:
        columns = show.PAUSED if args.paused else show.LINEAGE
        return _emit(show.csv_text(*show.lineage_table(rows, columns)))
    if args.json:
        return _emit(show.as_json_text(rows))
    (show.print_paused if args.paused else show.print_lineage)(study, rows, console)
    return 0


def _emit(text):
    """Print ``text``; a reader that closes the pipe early (``| head``) is no error."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
    return 0


def _status(args):
    import json

    from .inspect import load
    from .inspect._summary import render, summary

    info = summary(load(args.expdir))
    return _emit((json.dumps(info, indent=2) if args.json else "\n".join(render(info))) + "\n")


def _write(args):
    """``emews plot`` and ``emews report``: write the study's figure or report, say where."""
    from .inspect import load

    study = load(args.expdir)
    if args.command == "plot":
        print(f"emews: wrote {study.plot(args.output, args.metric)}")
    else:
        print(f"emews: wrote {study.report(args.output)}")
    return 0


def _space(args):
    import json

    from ._configspace import read
    from .inspect._plot import write_file

    text = json.dumps(read(args.file).to_json(), indent=2) + "\n"
    if args.output is None:
        return _emit(text)
    write_file(args.output, lambda path: path.write_text(text, encoding="utf-8"))
    print(f"emews: wrote {args.output}")
    return 0


def _swift_t(args):
    from .launch._swift_t import build

    print(os.pathsep.join(map(str, build(args.source, args.prefix, apt=not args.no_apt))))
    return 0


def _export(args):
    from .inspect import load
    from .inspect._export import FORMATS, export

    to, target = args.to
    if to not in FORMATS:
        raise ConfigError("emews export --to", f"FORMAT must be one of {list(FORMATS)}", to)
    print(f"emews: {export(load(args.expdir), to, target, args.study_name)}")
    return 0


def _dashboard(args):
    from .inspect._dashboard import serve

    return serve(args.paths, args.host, args.port)


if __name__ == "__main__":
    sys.exit(main())
