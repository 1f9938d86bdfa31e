"""What the ``emews`` command says about itself: ``--version``, an example under each command's
``--help``, and shell completion (``emews completion bash|zsh``, through argcomplete).

Nothing here is imported by a command that runs a study but the parser itself; argcomplete is
imported only when the shell asks for completions (``_ARGCOMPLETE`` set) or for its script.
"""

import argparse
import os
import sys

# One example per command, shown under ``emews COMMAND --help``.
EXAMPLES = {
    "run": "emews run study.toml --budget 100 --set study.seed=7\n"
           "mpiexec -n 64 emews run study.toml         # inside a batch job\n"
           "emews run --resume experiments/study/EXP003\n"
           "emews run --supervisor-cfg cfg-sys-1.sh cfg-prm-1.sh --dry-run",
    "serve": "emews serve study.toml                     # prints the address\n"
             "emews serve --resume experiments/study/EXP003",
    "pool": "mpiexec -n 64 emews pool experiments/study/EXP003\n"
            "mpiexec -n 8 emews pool tcp://login1:5555 --key KEYS --walltime 3500",
    "pause": "emews pause experiments/study/EXP003      # emews unpause EXPDIR hands work out again",
    "unpause": "emews unpause experiments/study/EXP003",
    "stop": "emews stop experiments/study/EXP003       # running evaluations finish first",
    "show": "emews show experiments/study/EXP003 --top 5\n"
            "emews show experiments/study/EXP003 --where \"lr < 0.01 and act == relu\" --csv\n"
            "emews show experiments/study/EXP003 --failed",
    "plot": "emews plot experiments/study/EXP003 -o convergence.png --metric val_acc",
    "status": "emews status experiments/study/EXP003 --json",
    "report": "emews report experiments/study/EXP003    # writes EXPDIR/report.html",
    "export": "emews export experiments/study/EXP003 --to optuna sqlite:///study.db\n"
              "emews export experiments/study/EXP003 --to csv evaluations.csv",
    "submit": "emews submit study.toml --site frontier --project MED106 --procs 65 "
              "--walltime 02:00:00\n"
              "emews submit study.toml --site slurm --dry-run",
    "site": "emews site list\n"
            "emews site import SUPERVISOR/workflows/common/sh mycluster",
    "dashboard": "emews dashboard experiments/study/EXP003    # prints the URL, token included\n"
                 "emews dashboard experiments/study --port 0  # every experiment of a workflow",
    "supervisor": "emews supervisor --dry-run polaris GA cfg-1.sh   # the supervisor tool's call\n"
                  "emews supervisor polaris EXP001 cfg-sys-1.sh cfg-prm-1.sh   # workflow.sh's",
    "swift-t": "emews swift-t build --prefix ~/swift-t    # prints the PATH entries last\n"
               "emews swift-t build --source swift-t.tar.gz   # offline, from a copy of its source",
    "space": "emews space import --from configspace configspace.json -o space.json",
    "completion": "eval \"$(emews completion bash)\"           # in ~/.bashrc\n"
                  "emews completion zsh > ~/.zfunc/_emews     # or eval it in ~/.zshrc",
}

class Version(argparse.Action):
    """``--version``: print the installed emews-hpo's version and exit (looked up only then)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="print emews-hpo's version and exit"):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("emews-hpo")
        except PackageNotFoundError:
            found = "(not installed)"
        print(f"emews {found}")
        parser.exit()


def add_examples(commands):
    """Put each command's example of :data:`EXAMPLES` under its ``--help``."""
    for name, sub in commands.choices.items():
        if name in EXAMPLES:
            sub.formatter_class = argparse.RawDescriptionHelpFormatter
            sub.epilog = "example:\n" + "\n".join(f"  {line}"
                                                  for line in EXAMPLES[name].splitlines())


def complete(top):
    """Answer the shell's completion request, when this process is one (argcomplete exits)."""
    if "_ARGCOMPLETE" in os.environ:
        import argcomplete

        argcomplete.autocomplete(top)


def print_completion(args):
    """``emews completion SHELL``: the shell's completion script for the ``emews`` command."""
    import argcomplete

    sys.stdout.write(argcomplete.shellcode(["emews"], shell=args.shell))
    return 0
