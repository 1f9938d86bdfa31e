"""What ``emews`` says about itself: ``--version``, an example under every command's ``--help``
(each example parses), and completion in a real bash and a real zsh."""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from emews._cli import parser
from emews._cli_help import EXAMPLES

BIN = Path(sys.executable).parent   # the venv's bin: its emews console script


def commands():
    return next(a for a in parser()._actions
                if isinstance(a, argparse._SubParsersAction)).choices


def test_the_version_is_the_installed_distribution_s(emews_cli):
    done = emews_cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"emews {version('emews-hpo')}\n"


def example_argv(line):
    """The ``emews`` words of one example line: its comment, an ``mpiexec -n N`` before it, an
    ``eval "$(...)"`` around it and a redirection after it left out."""
    line = line.split("  #")[0].strip()
    if line.startswith('eval "$('):
        line = line[len('eval "$('):-len(')"')]
    words = shlex.split(line)
    words = words[:words.index(">")] if ">" in words else words
    return words[3:] if words[0] == "mpiexec" else words


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_command_s_help_ends_with_an_example_that_parses(name):
    text = commands()[name].format_help()
    assert "\nexample:\n" in text, f"emews {name} --help has no example (add it to EXAMPLES)"
    for line in EXAMPLES[name].splitlines():
        assert f"  {line}" in text
        words = example_argv(line)
        assert words[:2] == ["emews", name], line
        parser().parse_args(words[1:])   # an example that no longer parses exits here


@pytest.mark.parametrize("name", ["emews", *sorted(commands())])
def test_every_help_is_plain_text_without_the_docstrings_markup(name):
    text = (parser() if name == "emews" else commands()[name]).format_help()
    for markup in ("``", ":func:", ":class:", ":mod:", ":data:"):
        assert markup not in text, f"{name} --help shows {markup}"


def shell_env():
    return dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")


BASH = """
eval "$(emews completion bash)"
complete -p emews
COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<< "$1"
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_python_argcomplete emews "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
printf '%s\\n' "${COMPREPLY[@]}"
"""


@pytest.mark.parametrize("line,expected", [("emews sh", {"show"}),
                                           ("emews show --f", {"--failed"}),
                                           ("emews completion ", {"bash", "zsh", "-h", "--help"})])
def test_bash_completes_commands_and_options(line, expected):
    done = subprocess.run(["bash", "-c", BASH, "bash", line], capture_output=True, text=True,
                          env=shell_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    registered, *replies = done.stdout.splitlines()
    assert registered.endswith("-F _python_argcomplete emews")
    assert {r.strip() for r in replies if r.strip()} == expected


# zsh's own completion system registers the script (compinit, compdef); the completion
# widget's display (_describe, which works only while a widget runs) prints what it is given.
ZSH = """
autoload -U compinit && compinit -u
eval "$(emews completion zsh)"
print -r -- "registered: $_comps[emews]"
_describe() { print -rl -- "${(@P)2}" }
BUFFER="$1"; CURSOR=${#BUFFER}; words=(${=BUFFER})
_python_argcomplete
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("zsh") is None, reason="apt-get install zsh (.ci/apt-packages)")
def test_zsh_completes_commands_with_their_help():
    done = subprocess.run(["zsh", "-f", "-c", ZSH, "zsh", "emews sta"], capture_output=True,
                          text=True, env=shell_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["registered: _python_argcomplete",
                                        "status:where a study stands (running or finished)"]


def test_help_imports_no_completion_machinery():
    """``emews --help`` stays fast: argcomplete is imported only for a completion request."""
    code = ("import sys; from emews._cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('argcomplete' in sys.modules, 'emews._study' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.splitlines()[-1] == "False False"


@pytest.mark.parametrize("argv, rule", [
    (["dashboard", "EXP001", "--port", "99999"], "argument --port: must be a port number from "
     "0 to 65535, got '99999'"),
    (["serve", "study.toml", "--port", "http"], "argument --port: must be a port number from "
     "0 to 65535, got 'http'"),
    (["run", "study.toml", "--budget", "ten"], "argument --budget: invalid int value: 'ten'"),
    (["pool", "EXP001", "--walltime"], "argument --walltime: expected one argument"),
    (["site", "show"], "the following arguments are required: name"),
    (["swift-t", "build", "--prefixx", "/opt"], "unrecognized arguments: --prefixx /opt"),
])
def test_every_command_s_usage_error_is_one_line(emews_cli, argv, rule):
    done = emews_cli(*argv)
    assert done.returncode == 2 and done.stdout == ""
    words = " ".join(argv[:2] if argv[0] in ("site", "swift-t") else argv[:1])
    assert done.stderr == f"emews: error: emews {words}: {rule}\n"
