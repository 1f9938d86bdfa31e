"""CANDLE/Supervisor's ``cfg-sys-*.sh`` and ``cfg-prm-*.sh`` files as an emews study: parsed,
never run.

Supervisor's workflows ``source`` the two files; emews reads them without a shell (no ``bash``,
no ``eval``), statement by statement, in the forms those files use::

    # a comment, or a blank line
    [export] NAME=WORD [NAME=WORD ...]   WORD: plain, "double" or 'single' quoted text with
    NAME+=WORD                           $NAME, ${NAME}, ${NAME:-WORD}, ${NAME-WORD},
    export NAME                          ${NAME:=WORD}, ${NAME=WORD} and $(( arithmetic ))
    : ${NAME:=WORD} ...
    if TEST; then | elif TEST; then | else | fi     TEST: [ A = B ], [ A != B ], [[ A == B ]],
                                                    [ -z A ], [ -n A ], [ A ] (or [[ ]])
    echo ..., printf ...                 not printed: the message of an ``exit`` that follows
    exit [N]                             an error: the file refuses the settings
    set -x, set +x                       nothing

``cfg-sys`` is read first, then ``cfg-prm``, in one namespace, as Supervisor sources them. A
reference resolves against the files' earlier assignments, then the environment;
``EMEWS_PROJECT_ROOT`` defaults to the directory above the cfg-prm file's (Supervisor's
``workflows/NAME/test/`` layout) and ``WORKFLOWS_ROOT`` to the one above that. Supervisor's
workflows run with ``set -u``, so a variable set nowhere is an error here too. Any other form
(command substitution, a pipe, a function, a loop, another ``${...}``) is one error naming the
file, the line, the rule and the text.

:func:`read` maps what the files set to a study (a dict shaped like the TOML file)::

    PROCS, PPN, WALLTIME, QUEUE, PROJECT      [system] procs, ppn, walltime, queue, project
    MODEL_NAME                                [study] model_name and name (EXPnnn numbering)
    PARAM_SET_FILE, SEED, MODEL_RETURN, ...   [study] space, seed, model_return, ...
    SH_TIMEOUT; BENCHMARK_TIMEOUT             [study] timeout; [model] benchmark_timeout
    IGNORE_ERRORS (0; 1)                      [failure] on_failure ("abort"; "fail"), as
                                              Supervisor's model.sh aborts the workflow or not
    GA: NUM_ITERATIONS, POPULATION_SIZE,      algorithm "ga", batch mode: [algorithm]
        STRATEGY (GA_STRATEGY), MUT_PROB, ... generations, population_size, strategy, ...;
                                              budget: the most points those generations hold
    mlrMBO: MAX_BUDGET, MAX_ITERATIONS,       algorithm "mbo", batch mode: [study] budget;
        DESIGN_SIZE, PROPOSE_POINTS           [algorithm] max_iterations, design_size, ...
    upf: a UPF file (JSON lines) instead of   algorithm "sweep" of that file, async mode (every
        a cfg-prm file                        point at once, as Supervisor's upf workflow)

The workflow is the cfg-prm file's (``workflows/GA`` or ``workflows/mlrMBO``), else the one
whose variables the files set; a second file whose name does not end in ``.sh`` is the UPF of
Supervisor's upf workflow (``workflow.sh SITE EXPID CFG_SYS UPF``). A variable emews reads
from the environment itself (``PROCS``, ``MODEL_NAME``, ...) takes the environment's value
first, as emews's precedence says, so the study printed is the study run. A variable the files
set that would change the study and that emews does not map is refused, never ignored; the few
that change nothing under emews (:data:`UNUSED`) are named in the study's notes. A variable
that only later lines of the files use (a helper such as ``POP_DEFAULT``) is no setting.
"""

import os
import re
from pathlib import Path

from ..config import SCHEMA
from ..errors import ConfigError

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)", re.S)
OPERATORS = "|&<>()`"
FORMS = ("NAME=value, export, ':', if/elif/else/fi on [ ] tests, echo, printf, exit, set -x; "
         "a cfg file is parsed, never run")

# Variable: (table, key, kind). Kinds: int, float, str, path, timeout (-1, 0 or empty: none).
COMMON = {
    "PROCS": ("system", "procs", "int"), "PPN": ("system", "ppn", "int"),
    "WALLTIME": ("system", "walltime", "str"), "QUEUE": ("system", "queue", "str"),
    "PROJECT": ("system", "project", "str"),
    "MODEL_NAME": ("study", "model_name", "str"), "MODEL_RETURN": ("study", "model_return", "str"),
    "CANDLE_MODEL_IMPL": ("study", "impl", "str"), "CANDLE_DATA_DIR": ("study", "data_dir", "path"),
    "PARAM_SET_FILE": ("study", "space", "path"), "SEED": ("study", "seed", "int"),
    "SH_TIMEOUT": ("study", "timeout", "timeout"),
    "BENCHMARK_TIMEOUT": ("model", "benchmark_timeout", "timeout"),
    "FRAMEWORK": ("model", "framework", "str"), "MODEL_PYTHON_DIR": ("model", "python_dir", "path"),
    "MODEL_PYTHON_SCRIPT": ("model", "python_script", "str"),
    "CANDLE_MODEL_TYPE": ("model", "type", "str"), "CANDLE_IMAGE": ("model", "image", "path"),
    "MODEL_ACTION": ("model", "action", "str"),
    "APP_PYTHONPATH": ("model", "app_pythonpath", "str"),
    "CANDLE_DEFAULT_MODEL_FILE": ("model", "default_model", "path"),
}
WORKFLOWS = {
    "GA": ("ga", {
        "NUM_ITERATIONS": ("algorithm", "generations", "int"),
        "POPULATION_SIZE": ("algorithm", "population_size", "int"),
        "GA_STRATEGY": ("algorithm", "strategy", "str"),
        "STRATEGY": ("algorithm", "strategy", "str"),   # what Supervisor's GA reads; wins
        "OFFSPRING_PROPORTION": ("algorithm", "offspring_proportion", "float"),
        "MUT_PROB": ("algorithm", "mutation_prob", "float"),
        "CX_PROB": ("algorithm", "crossover_prob", "float"),
        "MUT_INDPB": ("algorithm", "mutation_indpb", "float"),
        "CX_INDPB": ("algorithm", "crossover_indpb", "float"),
        "TOURNSIZE": ("algorithm", "tournament_size", "int"),
        "INIT_PARAMS_FILE": ("algorithm", "population_file", "path"),
    }),
    "mlrMBO": ("mbo", {
        "MAX_BUDGET": ("study", "budget", "int"),
        "MAX_ITERATIONS": ("algorithm", "max_iterations", "int"),
        "DESIGN_SIZE": ("algorithm", "design_size", "int"),
        "PROPOSE_POINTS": ("algorithm", "propose_points", "int"),
    }),
}
# Supervisor's GA workflow.sh: ": ${NUM_ITERATIONS:=3} ${POPULATION_SIZE:=3} ..."
GA_DEFAULTS = {"NUM_ITERATIONS": "3", "POPULATION_SIZE": "3"}
OTHER_WORKFLOWS = ("random", "grid", "upf", "async-search", "cp1", "cp-leaveout", "uq-noise",
                   "dense-noise", "csg", "cmp-cv", "simple_uq")
UNUSED = {  # set by Supervisor's files, and changing nothing under emews
    "TURBINE_RESIDENT_WORK_WORKERS": "emews lays out its own ranks",
    "RESIDENT_WORK_RANKS": "emews lays out its own ranks",
    "MAX_CONCURRENT_EVALUATIONS": "no Supervisor workflow reads it",
    "MAX_CONCURRET_EVALUATIONS": "no Supervisor workflow reads it",
}
FROM_ENVIRONMENT = {s.env for table in SCHEMA.values() for s in table.values() if s.env}


class Namespace:
    """The variables two cfg files set, read in order; :meth:`read` reads one file."""

    def __init__(self, environ):
        self.environ = environ
        self.values = {}       # name -> value, as the files left it
        self.where = {}        # name -> "file:line" of its last assignment
        self.referenced = set()
        self.said = ""         # the text of an echo or printf, until the next command

    def get(self, name):
        """The value of ``name``: the files', else the environment's (``None``: unset)."""
        return self.values[name] if name in self.values else self.environ.get(name)

    def read(self, path):
        """Read the file ``path``, statement by statement (see the module's docstring)."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(str(path), "the cfg file must be readable UTF-8 text",
                              getattr(exc, "strerror", None) or str(exc),
                              show_value=False) from None
        frames = []   # one per open if: [active now, a branch taken, the enclosing one active]
        then_due = False
        for line, words in statements(text, path):
            where = f"{path}:{line}"
            if then_due and words[0] != "then":
                raise ConfigError(where, "'then' must follow an if or elif test", words[0])
            # "then" and "else" may start a line that goes on: "then NAME=value"
            parts = [words[:1], words[1:]] if words[0] in ("then", "else") else [words]
            for part in filter(None, parts):
                then_due = self._statement(part, where, frames, then_due)
        if frames:
            raise ConfigError(str(path), "every if must be closed by fi", None, show_value=False)

    def _statement(self, words, where, frames, then_due):
        """Act on one statement; returns whether a ``then`` is due next."""
        head = words[0]
        enclosing = all(frame[0] for frame in frames)
        if head == "if":
            active = enclosing and self._test(words[1:], where)
            frames.append([active, active, enclosing])
            return True
        if head in ("elif", "else", "fi", "then") and not frames:
            raise ConfigError(where, f"'{head}' must follow an if", head)
        if head == "then":
            if not then_due:
                raise ConfigError(where, "'then' must follow an if or elif test", head)
            return False
        if head in ("elif", "else", "fi"):
            frame = frames[-1]
            if head == "fi":
                frames.pop()
            elif head == "else":
                frame[0], frame[1] = frame[2] and not frame[1], True
            else:
                frame[0] = frame[2] and not frame[1] and self._test(words[1:], where)
                frame[1] = frame[1] or frame[0]
            return head == "elif"
        if enclosing:
            self._command(words, where)
        return False

    def _command(self, words, where):
        head = words[0]
        said, self.said = self.said, ""     # an exit's message is the echo just before it
        if all(ASSIGNMENT.fullmatch(word) for word in words):
            for word in words:
                self._assign(word, where)
        elif head == "export":
            for word in words[1:]:
                if ASSIGNMENT.fullmatch(word):
                    self._assign(word, where)
                elif not NAME.fullmatch(word):
                    raise ConfigError(where, "export takes NAME or NAME=value", word)
        elif head == ":":
            for word in words[1:]:
                self.expand(word, where)
        elif head in ("echo", "printf"):
            self.said = " ".join(self._loosely(word, where) for word in words[1:])
        elif head == "exit":
            code = words[1] if len(words) > 1 else "0"
            said = f": {said}" if said else ""
            raise ConfigError(where, f"the cfg file refuses these settings (exit {code}{said})",
                              None, show_value=False)
        elif head == "set" and all(flag in ("-x", "+x") for flag in words[1:]):
            pass
        else:
            raise ConfigError(where, f"is not one of the forms emews reads ({FORMS})",
                              " ".join(words))

    def _assign(self, word, where):
        name, append, raw = ASSIGNMENT.fullmatch(word).groups()
        value = self.expand(raw, where)
        self.values[name] = (self.get(name) or "") + value if append else value
        self.where[name] = where

    def _loosely(self, word, where):
        """An echo's word: expanded where it can be, else as written."""
        try:
            return self.expand(word, where)
        except ConfigError:
            return word

    def _test(self, words, where):
        """The truth of ``[ ... ]`` or ``[[ ... ]]``."""
        pairs = {"[": "]", "[[": "]]"}
        if len(words) < 2 or words[0] not in pairs or words[-1] != pairs[words[0]]:
            raise ConfigError(where, "the test must be [ ... ] or [[ ... ]]", " ".join(words))
        inner = words[1:-1]
        if len(inner) == 3 and inner[1] in ("=", "==", "!="):
            left, right = self.expand(inner[0], where), self.expand(inner[2], where)
            return (left == right) == (inner[1] != "!=")
        if len(inner) == 2 and inner[0] in ("-z", "-n"):
            return (self.expand(inner[1], where) == "") == (inner[0] == "-z")
        if len(inner) == 1:
            return self.expand(inner[0], where) != ""
        raise ConfigError(where, "the test must be A = B, A == B, A != B, -z A, -n A or A",
                          " ".join(words))

    # --- words ----------------------------------------------------------------------------------

    def expand(self, raw, where):
        """The value of the shell word ``raw`` (quotes removed, references resolved)."""
        out, i = [], 0
        while i < len(raw):
            c = raw[i]
            if c == "'":
                end = raw.index("'", i + 1)   # statements() checked that quotes are closed
                out.append(raw[i + 1:end])
                i = end + 1
            elif c == '"':
                i = self._double(raw, i + 1, out, where)
            elif c == "\\":
                out.append(raw[i + 1:i + 2])
                i += 2
            elif c == "$":
                i = self._dollar(raw, i, out, where)
            elif c in OPERATORS:
                raise ConfigError(where, f"'{c}' is a shell operator or command, and cfg files "
                                  "are parsed, never run", raw)
            else:
                out.append(c)
                i += 1
        return "".join(out)

    def _double(self, raw, i, out, where):
        while raw[i] != '"':
            if raw[i] == "\\" and raw[i + 1] in '$`"\\\n':
                out.append("" if raw[i + 1] == "\n" else raw[i + 1])
                i += 2
            elif raw[i] == "$":
                i = self._dollar(raw, i, out, where)
            elif raw[i] == "`":
                raise ConfigError(where, "command substitution (`...`) is never run", raw)
            else:
                out.append(raw[i])
                i += 1
        return i + 1

    def _dollar(self, raw, i, out, where):
        """Expand the reference at ``raw[i] == "$"`` into ``out``; the index after it."""
        rest = raw[i + 1:]
        if rest.startswith("(("):
            end = closing(raw, i + 1, "(", ")", where)
            if raw[end - 1] != ")" or raw[end - 2] != ")":
                raise ConfigError(where, "arithmetic must be $(( ... ))", raw)
            out.append(str(Arithmetic(raw[i + 3:end - 2], self, where).value()))
            return end
        if rest.startswith("("):
            raise ConfigError(where, "command substitution $(...) is never run", raw)
        if rest.startswith("{"):
            end = closing(raw, i + 1, "{", "}", where)
            out.append(self._braced(raw[i + 2:end - 1], where))
            return end
        name = NAME.match(rest)
        if name:
            out.append(self.lookup(name.group(), where))
            return i + 1 + name.end()
        if rest[:1] and not rest[:1].isspace() and rest[:1] not in "\"'":
            raise ConfigError(where, f"${rest[:1]} is not read (only $NAME and ${{...}})", raw)
        out.append("$")
        return i + 1

    def _braced(self, inner, where):
        match = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=])(.*))?", inner, re.S)
        if not match:
            raise ConfigError(where, "only ${NAME}, ${NAME:-WORD}, ${NAME-WORD}, ${NAME:=WORD} "
                              "and ${NAME=WORD} are read", "${" + inner + "}")
        name, operator, word = match.groups()
        if operator is None:
            return self.lookup(name, where)
        self.referenced.add(name)
        value = self.get(name)
        if value is None or (operator.startswith(":") and value == ""):
            value = self.expand(word, where)
            if operator.endswith("="):
                self.values[name], self.where[name] = value, where
        return value

    def lookup(self, name, where):
        """``$NAME``: set by the files or the environment, else an error (``set -u``)."""
        self.referenced.add(name)
        value = self.get(name)
        if value is None:
            raise ConfigError(where, f"${name} is set neither by the cfg files (before this "
                              "line) nor in the environment (Supervisor runs them with set -u)",
                              None, show_value=False)
        return value


class Arithmetic:
    """``$(( ... ))`` of integers and variables with + - * / % and parentheses."""

    TOKEN = re.compile(r"\s*(\d+|\$?[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\}|"
                       r"[-+*/%()])")

    def __init__(self, text, namespace, where):
        self.text, self.where, self.tokens, at = text, where, [], 0
        while text[at:].strip():
            match = self.TOKEN.match(text, at)
            if not match:
                raise ConfigError(where, "arithmetic takes integers, names, + - * / % and "
                                  "parentheses", f"$(( {text} ))")
            self.tokens.append(match.group(1))
            at = match.end()
        self.namespace = namespace

    def value(self):
        result = self._sum()
        if self.tokens:
            self._fail()
        return result

    def _fail(self):
        raise ConfigError(self.where, "arithmetic must be a well-formed expression",
                          f"$(( {self.text} ))")

    def _take(self):
        if not self.tokens:
            self._fail()
        return self.tokens.pop(0)

    def _sum(self):
        value = self._product()
        while self.tokens and self.tokens[0] in "+-":
            value = value + self._product() if self._take() == "+" else value - self._product()
        return value

    def _product(self):
        value = self._unary()
        while self.tokens and self.tokens[0] in ("*", "/", "%"):
            operator, right = self._take(), self._unary()
            if operator != "*" and right == 0:
                raise ConfigError(self.where, "arithmetic must not divide by zero",
                                  f"$(( {self.text} ))")
            quotient = abs(value) // abs(right) * (1 if (value >= 0) == (right >= 0) else -1) \
                if operator != "*" else 0
            value = value * right if operator == "*" else \
                quotient if operator == "/" else value - right * quotient
        return value

    def _unary(self):
        token = self._take()
        if token == "-":
            return -self._unary()
        if token == "(":
            value = self._sum()
            if self._take() != ")":
                self._fail()
            return value
        if token.isdigit():
            return int(token)
        if token in "+*/%)":
            self._fail()
        name = token.strip("${}")
        text = self.namespace.lookup(name, self.where).strip() or "0"
        if not re.fullmatch(r"-?\d+", text):
            raise ConfigError(self.where, f"${name} must be an integer in arithmetic", text)
        return int(text)


def closing(raw, i, opening, close, where):
    """The index after the ``close`` that matches the ``opening`` at ``raw[i]``."""
    depth = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and opening == "{":
            i = raw.index("'", i + 1) + 1
            continue
        if c == '"':
            i = skip_double(raw, i + 1)
            continue
        depth += (c == opening) - (c == close)
        i += 1
        if depth == 0:
            return i
    raise ConfigError(where, f"'{opening}' must be closed by '{close}'", raw)


def skip_double(raw, i):
    """The index after the double quote that closes the string starting at ``raw[i]``."""
    while raw[i] != '"':
        i += 2 if raw[i] == "\\" else 1
    return i + 1


def statements(text, path):
    """``(line, words)`` for each statement of ``text`` (split on newlines and ``;``); a word
    keeps its quotes and references, for :meth:`Namespace.expand`."""
    words, start, line, i = [], 1, 1, 0
    while i < len(text):
        c = text[i]
        if c in "\n;":
            if words:
                yield start, words
            words = []
            line += c == "\n"
            i += 1
        elif c in " \t\r":
            i += 1
        elif c == "\\" and text[i + 1:i + 2] == "\n":
            line += 1
            i += 2
        elif c == "#":
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
        else:
            if not words:
                start = line
            end = word_end(text, i, f"{path}:{line}")
            line += text.count("\n", i, end)
            words.append(text[i:end])
            i = end
    if words:
        yield start, words


def word_end(text, i, where):
    """The index after the shell word that starts at ``text[i]``."""
    try:
        while i < len(text) and text[i] not in " \t\r\n;":
            c = text[i]
            if c == "\\":
                i += 2
            elif c == "'":
                i = text.index("'", i + 1) + 1
            elif c == '"':
                i = skip_double(text, i + 1)
            elif text.startswith("${", i) or text.startswith("$((", i):
                opening, close = ("{", "}") if text[i + 1] == "{" else ("(", ")")
                i = closing(text, i + 1, opening, close, where)
            elif text.startswith("$(", i) or c == "`":
                raise ConfigError(where, "command substitution is never run",
                                  text[i:].split("\n")[0])
            elif c in OPERATORS:
                raise ConfigError(where, f"'{c}' is a shell operator (a pipe, a redirection, a "
                                  "subshell or a function), and cfg files are parsed, never run",
                                  text[i:].split("\n")[0])
            else:
                i += 1
    except (ValueError, IndexError):
        raise ConfigError(where, "every quote must be closed", text[i:].split("\n")[0]) from None
    return i


def workflow(cfg_prm, namespace):
    """``(Supervisor's workflow name, emews algorithm, its variables)`` for these files."""
    project = Path(namespace.get("EMEWS_PROJECT_ROOT")).name
    if project in WORKFLOWS:
        return (project, *WORKFLOWS[project])
    if project in OTHER_WORKFLOWS:
        raise ConfigError(str(cfg_prm), f"is a cfg file of Supervisor's {project} workflow; "
                          f"emews runs those of {' and '.join(WORKFLOWS)} (and upf's: CFG_SYS "
                          "and a UPF file)", project)
    found = [name for name, (_, variables) in WORKFLOWS.items()
             if set(variables) & set(namespace.where)]
    if len(found) != 1:
        raise ConfigError(str(cfg_prm), "must be a cfg file of Supervisor's GA workflow "
                          "(NUM_ITERATIONS, POPULATION_SIZE, ...) or its mlrMBO workflow "
                          "(MAX_BUDGET, DESIGN_SIZE, ...)", found or None)
    return (found[0], *WORKFLOWS[found[0]])


def read(cfg_sys, cfg_prm, environ=None):
    """The study that Supervisor's two cfg files describe: ``(study, notes)``; ``study`` is a
    dict shaped like the TOML file, ``notes`` the lines worth telling (variables unused)."""
    environ = dict(os.environ if environ is None else environ)
    root = Path(environ.get("EMEWS_PROJECT_ROOT") or Path(cfg_prm).resolve().parent.parent)
    environ.setdefault("EMEWS_PROJECT_ROOT", str(root))
    environ.setdefault("WORKFLOWS_ROOT", str(root.parent))
    namespace = Namespace(environ)
    namespace.read(cfg_sys)
    upf = not str(cfg_prm).endswith(".sh")
    if upf:
        name, algorithm, variables = "upf", "sweep", {}
    else:
        namespace.read(cfg_prm)
        name, algorithm, variables = workflow(cfg_prm, namespace)
    mapping = {**COMMON, **variables}
    known = {*mapping, *UNUSED, "IGNORE_ERRORS"}
    notes = [f"{var} = {namespace.values[var]!r} is not used: {why}"
             for var, why in UNUSED.items() if var in namespace.where]
    for var, where in namespace.where.items():
        if var not in known and var not in namespace.referenced:
            raise ConfigError(f"{where}: {var}", f"is not a variable emews maps from a {name} "
                              f"cfg file ({', '.join(sorted(known - set(UNUSED)))})",
                              namespace.values[var])
    study = {"system": {}, "study": {"algorithm": algorithm, "mode": "async" if upf else "batch",
                                     "experiment_numbering": "supervisor"},
             "algorithm": {"file": str(Path(cfg_prm).resolve())} if upf else {},
             "model": {}, "failure": {}}
    for var, (table, key, kind) in mapping.items():
        value = environ.get(var) if var in FROM_ENVIRONMENT and environ.get(var) else \
            namespace.get(var) or (GA_DEFAULTS.get(var) if name == "GA" else None)
        if value not in (None, ""):
            where = namespace.where.get(var, f"environment variable {var}")
            converted = convert(value, kind, f"{where}: {var}")
            if converted is not None:
                study[table][key] = converted
    ignore = namespace.get("IGNORE_ERRORS")
    if ignore not in (None, ""):
        where = f"{namespace.where.get('IGNORE_ERRORS', 'environment variable')}: IGNORE_ERRORS"
        study["failure"]["on_failure"] = "abort" if convert(ignore, "int", where) == 0 else "fail"
    if "model_name" in study["study"]:
        study["study"]["name"] = study["study"]["model_name"]
    if name == "GA":
        study["study"]["budget"] = ga_budget(study["algorithm"])
    return {table: values for table, values in study.items() if values}, notes


def ga_budget(options):
    """The most points the GA's generations can hold: its stopping rule under emews."""
    population, generations = options["population_size"], options["generations"]
    if options.get("strategy", "mu_plus_lambda") == "simple":
        return population * generations
    offspring = max(1, round(options.get("offspring_proportion", 0.5) * population))
    return population + (generations - 1) * offspring


def convert(value, kind, where):
    """``value`` (text) as the setting's kind; ``None`` for an empty or negative timeout."""
    try:
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind == "timeout":
            return None if float(value) <= 0 else float(value)
    except ValueError:
        rule = "an integer" if kind == "int" else "a number"
        raise ConfigError(where, f"must be {rule}", value) from None
    return str(Path(value).resolve()) if kind == "path" else value


def render(study, notes, files):
    """The study as the text of an emews TOML file, with the files and notes as comments."""
    from ..launch.importer import _key, _toml

    lines = ["# The study of CANDLE/Supervisor's cfg files (emews run --supervisor-cfg):"]
    lines += [f"#   {Path(path).resolve()}" for path in files]
    lines += [f"# Note: {note}" for note in notes]
    for table, values in study.items():
        lines += ["", f"[{table}]"]
        lines += [f"{_key(key)} = {_toml(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"
