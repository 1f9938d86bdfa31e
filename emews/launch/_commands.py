"""The ``emews submit`` and ``emews site`` subcommands (their parsers and what they do)."""


def add_parsers(commands):
    """Add ``submit`` and ``site`` to the ``emews`` command's subparsers."""
    submit = commands.add_parser("submit", help="queue a batch job that runs a study on a site")
    submit.add_argument("config", nargs="*", help="TOML files: system and study settings")
    submit.add_argument("--site", required=True,
                        help="a site name (see: emews site list) or a path to a site file")
    submit.add_argument("--resume", metavar="EXPDIR", help="submit the study in EXPDIR again")
    submit.add_argument("--procs", type=int, help="MPI ranks (master + workers)")
    submit.add_argument("--ppn", type=int, help="ranks per node")
    submit.add_argument("--walltime", help="HH:MM:SS, D-HH:MM:SS or minutes")
    submit.add_argument("--queue", help="the scheduler's queue or partition")
    submit.add_argument("--project", help="the allocation (account) to charge")
    submit.add_argument("--budget", type=int, help="maximum number of evaluations")
    submit.add_argument("--name", help="workflow name (the experiment's parent directory)")
    submit.add_argument("--data-dir", help="CANDLE_DATA_DIR: where experiments are made")
    submit.add_argument("--chain", type=int, default=0, metavar="N",
                        help="queue N follow-up jobs, each resuming the study after the last")
    submit.add_argument("--pools", type=int, default=0, metavar="K",
                        help="submit K pool jobs (emews pool) for the study in --resume EXPDIR "
                        "that emews serve runs")
    submit.add_argument("--dry-run", action="store_true",
                        help="print the batch script(s); make and submit nothing")
    submit.add_argument("--set", action="append", default=[], metavar="TABLE.KEY=VALUE",
                        help="any setting; VALUE is read as TOML")
    site = commands.add_parser("site", help="list, show or import site files")
    actions = site.add_subparsers(dest="site_command", required=True)
    actions.add_parser("list", help="the sites emews ships and your own")
    show = actions.add_parser("show", help="print a site file")
    show.add_argument("name")
    imp = actions.add_parser("import", help="write a site file from CANDLE/Supervisor's "
                             "env-NAME.sh, sched-NAME.sh and langs-app-NAME.sh")
    imp.add_argument("directory", help="Supervisor's workflows/common/sh")
    imp.add_argument("name", help="the Supervisor site name (frontier, polaris, ...)")
    imp.add_argument("-o", "--output", help="the site file to write (default: "
                     "~/.config/emews/sites/NAME.toml)")
    imp.add_argument("--ppn", type=int, default=1,
                     help="PPN as Supervisor's files see it while they are read (default 1)")
    imp.add_argument("--force", action="store_true", help="overwrite an existing site file")


def run_submit(args):
    """``emews submit``: returns the exit status."""
    from .._config import command_overrides
    from ._submit import submit

    overrides = command_overrides("emews submit", args)
    submit(args.config or None, args.site, overrides, args.resume, args.chain, args.dry_run,
           pools=args.pools)
    return 0


def run_site(args):
    """``emews site list|show|import``: returns the exit status."""
    from . import _site as sites

    if args.site_command == "list":
        user = sites.USER_SITES.expanduser()
        for name in sites.shipped_sites():
            print(f"{name:12} {sites.load(name).description}")
        for path in sorted(user.glob("*.toml")) if user.is_dir() else []:
            print(f"{path.stem:12} {path}")
        return 0
    if args.site_command == "show":
        print(sites.find(args.name).read_text(), end="")
        return 0
    from ._importer import import_site

    import_site(args.directory, args.name, args.output, ppn=args.ppn, force=args.force)
    return 0
