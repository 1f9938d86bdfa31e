"""The ``emews`` command (also ``python -m emews``).

``emews run CONFIG [CONFIG2]`` runs a study: under ``mpiexec`` it uses the ranks it was given;
started alone it spawns its own local pool of ``[system].procs`` ranks.
``emews run --resume EXPDIR`` continues a killed or finished study.
``emews show EXPDIR`` prints the best evaluations and the counts of a study.
``emews plot EXPDIR`` draws its convergence and the workers' timeline.
``emews submit CONFIG --site NAME`` queues a batch job that runs the study on a site.
``emews site list|show|import`` lists, prints or imports (from Supervisor) site files.
"""

import argparse
import sys

import os

from .errors import ConfigError, EmewsError, Interrupted, MEAborted, Reported

EXIT_BAD_INPUT, EXIT_FAILED = 2, 1

SHORTCUTS = {"procs": "system.procs", "budget": "study.budget", "seed": "study.seed",
             "algorithm": "study.algorithm", "mode": "study.mode", "impl": "study.impl",
             "name": "study.name", "data_dir": "study.data_dir", "space": "study.space"}


def parser():
    """The argument parser of the ``emews`` command."""
    top = argparse.ArgumentParser(prog="emews", description=__doc__.splitlines()[0])
    commands = top.add_subparsers(dest="command", required=True)
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
    run.add_argument("--mode", choices=("async", "batch"))
    run.add_argument("--impl", help="CANDLE_MODEL_IMPL: py, app, echo, ...")
    run.add_argument("--space", help="search-space file")
    run.add_argument("--name", help="workflow name (the experiment's parent directory)")
    run.add_argument("--data-dir", help="CANDLE_DATA_DIR: where experiments are made")
    run.add_argument("--set", action="append", default=[], metavar="TABLE.KEY=VALUE",
                     help="any setting; VALUE is read as TOML")
    serve = commands.add_parser("serve", help="run a study as a service that pool jobs attach "
                                "to (emews pool)")
    serve.add_argument("config", nargs="*", help="TOML files: system and study settings")
    serve.add_argument("--resume", metavar="EXPDIR", help="serve the study in EXPDIR again")
    serve.add_argument("--bind", help="interface to listen on (default 127.0.0.1; any other "
                       "needs CURVE keys, made in EXPDIR/keys)")
    serve.add_argument("--port", type=int, help="port (default: a free one)")
    serve.add_argument("--lease", type=float, help="seconds a pool holds a task between "
                       "heartbeats (default 60)")
    serve.add_argument("--budget", type=int, help="maximum number of evaluations")
    serve.add_argument("--set", action="append", default=[], metavar="TABLE.KEY=VALUE")
    attach = commands.add_parser("pool", help="attach this MPI job's ranks to a served study "
                                 "(under mpiexec)")
    attach.add_argument("expdir", help="the served study's experiment directory")
    attach.add_argument("--walltime", type=float, help="seconds until this job must end: it "
                        "drains before then")
    attach.add_argument("--give-up", type=float, default=600.0, help="seconds of silence from "
                        "the service after which the pool ends (default 600)")
    for state, verb, text in (("paused", "pause", "hand out no new work (running evaluations "
                                                  "finish)"),
                              ("running", "unpause", "hand out work again"),
                              ("stopped", "stop", "finish what runs, then end the study")):
        steer = commands.add_parser(verb, help=f"{text}, in a running study")
        steer.add_argument("expdir")
        steer.set_defaults(state=state)
    show = commands.add_parser("show", help="print a study's best evaluations")
    show.add_argument("expdir")
    show.add_argument("--top", type=int, default=10)
    draw = commands.add_parser("plot", help="plot a study's convergence and worker timeline")
    draw.add_argument("expdir")
    draw.add_argument("-o", "--output", help="PNG file (default: EXPDIR/convergence.png)")
    from .launch.commands import add_parsers

    add_parsers(commands)  # submit, site
    return top


def main(argv=None):
    """Entry point of the ``emews`` console script; returns the exit status."""
    args = parser().parse_args(argv)
    try:
        from .launch.commands import run_site, run_submit

        return {"run": _run, "serve": _serve, "pool": _pool, "pause": _steer, "unpause": _steer,
                "stop": _steer, "show": _show, "plot": _plot, "submit": run_submit,
                "site": run_site}[args.command](args)
    except Interrupted as exc:
        if not os.environ.get("EMEWS_SPAWNED"):  # the command that spawned the job says it
            print(f"emews: interrupted; {getattr(exc, 'stored', 0)} evaluations stored; resume "
                  f"with: emews run --resume {getattr(exc, 'expdir', '?')}", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("emews: interrupted", file=sys.stderr)
        return 130
    except Reported as exc:
        return exc.status
    except ConfigError as exc:
        print(f"emews: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MEAborted as exc:
        print(f"emews: error: {exc}\n{exc.traceback}", file=sys.stderr)
        return EXIT_FAILED
    except EmewsError as exc:
        print(f"emews: error: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _run(args):
    from .config import parse_override
    from .study import execute_prepared, run

    if args.execute:
        result = execute_prepared(args.execute)
        return EXIT_FAILED if result is not None and result.all_failed else 0
    if not args.config and not args.resume:
        raise ConfigError("emews run", "needs a CONFIG file or --resume EXPDIR", None,
                          show_value=False)
    overrides = dict(parse_override(text) for text in args.set)
    for option, dotted in SHORTCUTS.items():
        value = getattr(args, option)
        if value is not None:
            overrides[dotted] = value
    if args.no_limit:
        overrides["study.no_limit"] = True
    result = run(args.config or None, overrides, args.resume)
    if result is not None and result.all_failed:
        if not os.environ.get("EMEWS_SPAWNED"):
            from .study import failure_reasons

            common = "; ".join(f"{reason} ({count}x)"
                               for reason, count in failure_reasons(result.expdir))
            print(f"emews: error: every evaluation failed ({result.evaluations}); the most "
                  f"common reasons: {common}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _serve(args):
    from .config import parse_override
    from .service import serve

    if not args.config and not args.resume:
        raise ConfigError("emews serve", "needs a CONFIG file or --resume EXPDIR", None,
                          show_value=False)
    overrides = dict(parse_override(text) for text in args.set)
    for option, dotted in (("bind", "service.bind"), ("port", "service.port"),
                           ("lease", "service.lease"), ("budget", "study.budget")):
        if getattr(args, option) is not None:
            overrides[dotted] = getattr(args, option)
    result = serve(args.config or None, overrides, args.resume)
    return EXIT_FAILED if result.all_failed else 0


def _pool(args):
    from .service import pool_job

    reason = pool_job(args.expdir, args.walltime, args.give_up)
    if reason:
        print(f"emews: pool left: {reason}", flush=True)
    return 0


def _steer(args):
    from .control import request

    request(args.expdir, args.state)
    print(f"emews: asked {args.expdir} to be {args.state}")
    return 0


def _show(args):
    from pathlib import Path

    from rich.console import Console
    from rich.table import Table

    from .store import Store

    path = Path(args.expdir) / "results.db"
    if not path.is_file():
        raise ConfigError(args.expdir, "must be an experiment directory holding results.db",
                          args.expdir, show_value=False)
    store = Store(path)
    try:
        rows = sorted(store.rows("done"), key=lambda r: r["result"])[:args.top]
        counts = store.counts()
        final = store.meta("final", {})
    finally:
        store.close()
    table = Table(title=f"{args.expdir}: best {len(rows)} of {sum(counts.values())}")
    for column in ("id", "result", "rank", "seconds", "params"):
        table.add_column(column)
    for row in rows:
        table.add_row(str(row["id"]), f"{row['result']:.6g}", str(row["rank"]),
                      f"{row['finished'] - row['started']:.2f}", str(row["params"]))
    console = Console()
    console.print(table)
    console.print(f"counts: {counts}; stop reason: {final.get('stop_reason', '-')}", markup=False)
    return 0


def _plot(args):
    from .plot import plot

    print(f"emews: wrote {plot(args.expdir, args.output)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
