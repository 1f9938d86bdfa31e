"""Read the Python code that ``.swift`` files hand to Turbine, without Swift/T.

A reader for the small subset of Swift/T that ``swift/*.swift`` use, following STC's lexer
(``ExM.g``) and its string-literal rules (``unescapeString``):

* it finds the Python leaf functions: the library's ``python`` and ``python_persist``, and any
  leaf whose Tcl template is ``turbine::python PERSIST EXCEPTIONS <<code>> <<expr>>``;
* it finds every call of one, with the code and expression arguments as expressions;
* it evaluates straight-line string functions (``[type] name = expression;`` statements made of
  literals, variables, ``+``, ``%`` formatting and calls), so a test gets, for given arguments,
  the exact code and expression Turbine would run, and runs them through a callback.

Anything outside that subset raises :class:`SwiftSourceError` naming the file and line: the
reader never guesses.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

OPERATORS = ("...", "%/", "%%", "**", ":=", "+=", "&&", "||", "==", "!=", ">=", "<=", "=>",
             "+", "-", "*", "/", "%", "=", "!", ">", "<", "(", ")", "{", "}", "[", "]", ",",
             ";", ":", "@", "|", ".")
SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
                  "\\": "\\", '"': '"', "?": "?"}
PYTHON_TEMPLATE = re.compile(r"set <<(\w+)>> \[ turbine::python ([01]) ([01]) <<(\w+)>> "
                             r"<<(\w+)>> \]")
COMPOUND_STATEMENTS = {"if", "for", "foreach", "wait", "iterate", "switch", "{"}
VOID = object()


class SwiftSourceError(Exception):
    """Something in a .swift file that this reader does not understand."""


@dataclass(frozen=True)
class Token:
    kind: str  # "str", "int", "id", "op"
    value: object
    file: str
    line: int

    def where(self):
        return f"{self.file}:{self.line}"


def fail(token, message):
    raise SwiftSourceError(f"{token.where()}: {message}")


# --- lexer ---------------------------------------------------------------------------------

def tokenize(text, file):
    """STC's tokens for ``text`` (comments dropped, string literals unescaped)."""
    tokens, i, line = [], 0, 1
    id_pattern, number = re.compile(r"[A-Za-z_][A-Za-z_0-9]*"), re.compile(r"[0-9]+")
    while i < len(text):
        c = text[i]
        if c in " \t\r\n\f":
            line += c == "\n"
            i += 1
        elif text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise SwiftSourceError(f"{file}:{line}: unterminated /* comment")
            line += text.count("\n", i, end)
            i = end + 2
        elif c == "#":
            raise SwiftSourceError(f"{file}:{line}: '#' starts a C preprocessor line in STC; "
                                   "keep it out of .swift files (workflow.sh runs swift-t -p)")
        elif text.startswith("----\n", i) or text.startswith('"""\n', i):
            quote = "----" if c == "-" else '"""'
            end = text.find(quote, i + len(quote))
            if end < 0:
                raise SwiftSourceError(f"{file}:{line}: unterminated {quote} string")
            raw = text[i + len(quote):end]
            tokens.append(Token("str", unescape(raw, file, line), file, line))
            line += raw.count("\n")
            i = end + len(quote)
        elif c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= len(text):
                raise SwiftSourceError(f"{file}:{line}: unterminated string literal")
            raw = text[i + 1:j]
            tokens.append(Token("str", unescape(raw, file, line), file, line))
            line += raw.count("\n")
            i = j + 1
        elif match := id_pattern.match(text, i):
            tokens.append(Token("id", match.group(), file, line))
            i = match.end()
        elif match := number.match(text, i):
            if text[match.end():match.end() + 1] in (".", "e", "E", "x", "o"):
                raise SwiftSourceError(f"{file}:{line}: only decimal integer literals are "
                                       "understood")
            tokens.append(Token("int", int(match.group()), file, line))
            i = match.end()
        else:
            op = next((op for op in OPERATORS if text.startswith(op, i)), None)
            if op is None:
                raise SwiftSourceError(f"{file}:{line}: unexpected character {c!r}")
            tokens.append(Token("op", op, file, line))
            i += len(op)
    tokens.append(Token("op", "<eof>", file, line))
    return tokens


def unescape(raw, file, line):
    """A literal's value, with STC's C-style escape codes."""
    out, i = [], 0
    while i < len(raw):
        c = raw[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        code = raw[i + 1:i + 2]
        if code in SIMPLE_ESCAPES:
            out.append(SIMPLE_ESCAPES[code])
            i += 2
        elif match := re.compile(r"[0-7]{1,3}").match(raw, i + 1):
            out.append(chr(int(match.group(), 8)))
            i = match.end()
        elif match := re.compile(r"x([0-9A-Fa-f]{1,2})").match(raw, i + 1):
            out.append(chr(int(match.group(1), 16)))
            i = match.end()
        else:
            raise SwiftSourceError(f"{file}:{line}: STC rejects the escape code \\{code}")
    return "".join(out)


# --- parser --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Node:
    """An expression: kind is str, int, bool, var, call, +, % or tuple."""

    kind: str
    value: object
    args: tuple = ()
    token: Token = None
    location: object = None  # a call's @location expression


@dataclass
class Function:
    name: str
    outputs: list
    inputs: list
    token: Token
    annotations: dict
    body: list = None  # composite: the body's tokens
    template: str = None  # leaf: the inline Tcl
    statements: list = None  # straight-line: (target, expression) pairs
    not_straight: str = None  # why the body is not straight-line


@dataclass(frozen=True)
class PythonLeaf:
    """A leaf that runs Python: Turbine's persist and exceptions_are_errors flags."""

    name: str
    persist: bool
    exceptions_are_errors: bool
    dispatch: str
    takes_exceptions_argument: bool = False


LIBRARY_LEAVES = {
    "python": PythonLeaf("python", False, True, "WORKER", True),
    "python_persist": PythonLeaf("python_persist", True, True, "WORKER", True),
}


@dataclass(frozen=True)
class PythonCall:
    """One call of a Python leaf, where it stands in the source."""

    leaf: PythonLeaf
    function: str
    token: Token
    code: Node
    expr: Node
    location: Node = None

    def where(self):
        return self.token.where()


class Parser:
    def __init__(self, tokens):
        self.tokens, self.i = tokens, 0

    def peek(self, offset=0):
        return self.tokens[min(self.i + offset, len(self.tokens) - 1)]

    def next(self):
        token = self.peek()
        self.i += 1
        return token

    def at(self, value, offset=0):
        token = self.peek(offset)
        return token.kind == "op" and token.value == value

    def expect(self, value):
        token = self.next()
        if token.kind != "op" or token.value != value:
            fail(token, f"expected {value!r}, found {token.value!r}")
        return token

    def expect_id(self):
        token = self.next()
        if token.kind != "id":
            fail(token, f"expected a name, found {token.value!r}")
        return token.value

    def skip_balanced(self):
        """Skip a bracketed group starting at the current token."""
        pairs = {"(": ")", "[": "]", "{": "}"}
        stack = [pairs[self.next().value]]
        while stack:
            token = self.next()
            if token.value == "<eof>":
                fail(token, "unbalanced brackets")
            if token.kind == "op" and token.value in pairs:
                stack.append(pairs[token.value])
            elif token.kind == "op" and token.value in pairs.values():
                if token.value != stack.pop():
                    fail(token, f"mismatched {token.value!r}")

    def skip_statement(self):
        """Skip to the end of a statement: its ';' or its last block."""
        start = self.peek()
        while not self.at(";"):
            if self.peek().value == "<eof>":
                fail(start, "statement without ';'")
            if self.at("{"):
                self.skip_balanced()
                if self.peek().kind != "id" or self.peek().value != "else":
                    return
                self.next()
                continue
            if self.at("(") or self.at("["):
                self.skip_balanced()
                continue
            self.next()
        self.next()

    # expressions

    def expression(self):
        """``term ('+' term)*``: STC puts '%' (with '*') above '+'."""
        return self.binary("+", self.term)

    def term(self):
        return self.binary("%", self.primary)

    def binary(self, operator, operand):
        node = operand()
        while self.at(operator):
            token = self.next()
            node = Node(operator, None, (node, operand()), token)
        self.reject_operator()
        return node

    def reject_operator(self):
        token = self.peek()
        if token.kind == "op" and token.value in ("-", "*", "/", "%/", "%%", "**", "[", "."):
            fail(token, f"the operator {token.value!r} is outside what this reader evaluates")

    def primary(self):
        token = self.peek()
        location = None
        if self.at("@"):
            self.next()
            if self.expect_id() != "location":
                fail(token, "only the @location call annotation is understood")
            self.expect("=")
            location = self.primary()
            token = self.peek()
            if token.kind != "id" or not self.at("(", 1):
                fail(token, "@location must annotate a function call")
        if token.kind == "str":
            self.next()
            return Node("str", token.value, token=token)
        if token.kind == "int":
            self.next()
            return Node("int", token.value, token=token)
        if token.kind == "id" and token.value in ("true", "false"):
            self.next()
            return Node("bool", token.value == "true", token=token)
        if token.kind == "id":
            self.next()
            if not self.at("("):
                return Node("var", token.value, token=token)
            self.next()
            args = []
            while not self.at(")"):
                if self.peek().kind == "id" and self.at("=", 1):
                    fail(self.peek(), "keyword arguments are not understood")
                args.append(self.expression())
                if not self.at(")"):
                    self.expect(",")
            self.next()
            return Node("call", token.value, tuple(args), token, location)
        if self.at("("):
            self.next()
            items = [self.expression()]
            while self.at(","):
                self.next()
                items.append(self.expression())
            self.expect(")")
            return items[0] if len(items) == 1 else Node("tuple", None, tuple(items), token)
        fail(token, f"an expression cannot start with {token.value!r}")

    # definitions

    def formal_list(self):
        """``(type name, ...)`` as (type, name) pairs; empty when there is no list."""
        if not self.at("("):
            return []
        self.next()
        formals = []
        while not self.at(")"):
            kind = self.expect_id()
            while self.at("|"):
                self.next()
                kind += "|" + self.expect_id()
            if self.at("..."):
                self.next()
                kind += "..."
            name = self.expect_id()
            while self.at("["):
                self.skip_balanced()
                kind += "[]"
            if self.at("="):
                fail(self.peek(), "default argument values are not understood")
            formals.append((kind, name))
            if not self.at(")"):
                self.expect(",")
        self.next()
        return formals

    def try_function(self, annotations):
        """Parse a function definition here, or return None (and move nothing)."""
        start = self.i
        token = self.peek()
        if not (self.at("(") or token.kind == "id"):
            return None
        outputs = self.formal_list() if self.at("(") else []
        name_token = self.peek()
        if name_token.kind != "id":
            self.i = start
            return None
        self.next()
        if not (self.at("(") or self.at("{")):
            self.i = start
            return None
        inputs_start = self.i
        try:
            inputs = self.formal_list()
        except SwiftSourceError:
            self.i = inputs_start
            self.skip_balanced()
            if self.at("{") or self.peek().kind == "str":
                raise  # a definition, with a parameter list this reader cannot read
            self.i = start
            return None
        function = Function(name_token.value, outputs, inputs, name_token, annotations)
        if self.at("{"):
            body_start = self.i + 1
            self.skip_balanced()
            function.body = self.tokens[body_start:self.i - 1]
            return function
        if self.peek().kind == "str":
            while self.peek().kind == "str":
                self.next()
            if self.at("["):
                self.next()
                tcl = self.next()
                if tcl.kind != "str":
                    fail(tcl, "expected the inline Tcl template")
                function.template = tcl.value
                self.expect("]")
            self.expect(";")
            return function
        self.i = start
        return None


def straight_line(function):
    """The body's statements as (target, expression) pairs, or None and why not."""
    eof = Token("op", "<eof>", function.token.file, function.token.line)
    parser = Parser(function.body + [eof])
    statements = []
    while parser.peek().value != "<eof>":
        token = parser.peek()
        if token.kind in ("op", "id") and token.value in COMPOUND_STATEMENTS:
            return None, f"{token.where()}: a {token.value!r} statement"
        if token.kind == "id" and parser.peek(1).kind == "id" and parser.at("=", 2):
            target = parser.peek(1).value
            parser.i += 3
        elif token.kind == "id" and parser.at("=", 1):
            target = token.value
            parser.i += 2
        else:
            return None, f"{token.where()}: a statement other than '[type] name = expression;'"
        try:
            expression = parser.expression()
        except SwiftSourceError as exc:
            return None, str(exc)
        if not parser.at(";"):
            return None, f"{parser.peek().where()}: {parser.peek().value!r} after an expression"
        parser.next()
        statements.append((target, expression))
    return statements, None


# --- the program ---------------------------------------------------------------------------

@dataclass
class Program:
    """.swift files read together: functions, string globals and the calls of Python leaves."""

    functions: dict = field(default_factory=dict)  # name -> [Function], one per module
    globals: dict = field(default_factory=dict)
    imports: dict = field(default_factory=dict)  # module -> names it imports
    calls: list = field(default_factory=list)
    leaves: dict = field(default_factory=dict)

    @classmethod
    def load(cls, paths):
        """Read the files ``paths`` (all of them, as one program)."""
        program = cls()
        for path in paths:
            program._read(Path(path))
        program.leaves = dict(LIBRARY_LEAVES)
        for function in program.all_functions():
            if function.template and "turbine::python" in function.template:
                program.leaves[function.name] = python_leaf(function)
        for function in program.all_functions():
            if function.body is not None:
                program.calls += find_calls(function, program.leaves)
                function.statements, function.not_straight = straight_line(function)
        return program

    @classmethod
    def compile(cls, main, imports=(), include=()):
        """The files STC would read for ``main`` with ``-i imports`` and ``-I include``.

        A module found in neither ``main``'s directory nor ``include`` is taken to be one of
        Swift/T's own (io, string, python, ...) and is not read.
        """
        main = Path(main)
        directories = [main.parent, *map(Path, include)]
        paths, pending = [], [main] + [_find(name, directories, required=True)
                                       for name in imports]
        while pending:
            path = pending.pop()
            if path in paths:
                continue
            paths.append(path)
            names = [t.value for t in _import_names(path)]
            pending += [p for p in (_find(n, directories) for n in names) if p]
        return cls.load(paths)

    def _read(self, path):
        parser = Parser(tokenize(path.read_text(), path.name))
        self.imports[path.stem] = []
        while parser.peek().value != "<eof>":
            annotations = {}
            while parser.at("@"):
                parser.next()
                key = parser.expect_id()
                value = True
                if parser.at("="):
                    parser.next()
                    value = parser.next().value
                annotations[key] = value
            token = parser.peek()
            if token.kind == "id" and token.value == "import":
                parser.next()
                name = parser.expect_id()
                while parser.at("."):
                    parser.next()
                    name += "." + parser.expect_id()
                parser.expect(";")
                self.imports[path.stem].append(name)
                continue
            if token.kind == "id" and token.value == "app":
                fail(token, "app functions are not read")
            if token.kind == "id" and token.value == "pragma":
                parser.skip_statement()
                continue
            function = parser.try_function(annotations)
            if function is not None:
                self.functions.setdefault(function.name, []).append(function)
                continue
            if annotations:
                fail(token, "annotations must precede a function definition")
            if (token.kind == "id" and token.value == "string" and parser.peek(1).kind == "id"
                    and parser.at("=", 2)):
                name = parser.peek(1).value
                parser.i += 3
                self.globals[name] = parser.expression()
                parser.expect(";")
                continue
            start = parser.i
            parser.skip_statement()
            for loose in parser.tokens[start:parser.i]:
                if loose.kind == "id" and loose.value in LIBRARY_LEAVES:
                    fail(loose, f"{loose.value}() called outside a function")

    def all_functions(self):
        return [f for defined in self.functions.values() for f in defined]

    def function(self, name):
        """The one function called ``name``."""
        defined = self.functions.get(name, [])
        if len(defined) != 1:
            where = ", ".join(f.token.where() for f in defined) or "nowhere"
            raise SwiftSourceError(f"{name} must be defined once in the program; defined: "
                                   f"{where}")
        return defined[0]

    def source_of(self, name):
        """A function body's tokens as text, one space apart (strings as Swift literals)."""
        return " ".join(_token_text(t) for t in self.function(name).body)


def _find(name, directories, required=False):
    for directory in directories:
        path = directory / f"{name}.swift"
        if path.is_file():
            return path
    if required:
        raise SwiftSourceError(f"module {name}: no {name}.swift in {list(map(str, directories))}")
    return None


def _import_names(path):
    tokens = tokenize(path.read_text(), path.name)
    return [tokens[i + 1] for i, t in enumerate(tokens)
            if t.kind == "id" and t.value == "import" and tokens[i + 1].kind == "id"]


def _token_text(token):
    if token.kind == "str":
        return '"' + token.value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(token.value)


def python_leaf(function):
    """A leaf function whose Tcl runs turbine::python, with its flags."""
    match = PYTHON_TEMPLATE.fullmatch(function.template.strip())
    names = [name for _, name in function.inputs]
    if (not match or [o for _, o in function.outputs] != [match.group(1)]
            or names != [match.group(4), match.group(5)]):
        fail(function.token, f"the turbine::python template of {function.name} is not "
                             f"'set <<output>> [ turbine::python P E <<code>> <<expr>> ]' over "
                             f"(string code, string expr): {function.template!r}")
    return PythonLeaf(function.name, match.group(2) == "1", match.group(3) == "1",
                      function.annotations.get("dispatch", "WORKER"))


def find_calls(function, leaves):
    """Every call of a Python leaf in a function's body."""
    calls, body = [], function.body
    for index, token in enumerate(body):
        if token.kind != "id" or token.value not in leaves:
            continue
        if index + 1 >= len(body) or body[index + 1].value != "(":
            fail(token, f"{token.value} used other than as a call")
        start = index - 4 if index >= 4 and body[index - 4].value == "@" else index
        if any(t.kind == "op" and t.value == "@" for t in body[start + 1:index]) or (
                start == index and index and body[index - 1].value in ("@", "=") and index >= 2
                and body[index - 2].value == "@"):
            fail(token, "only '@location=NAME' may annotate a Python call")
        parser = Parser(body[start:] + [Token("op", "<eof>", token.file, token.line)])
        node = parser.primary()
        leaf = leaves[token.value]
        most = 3 if leaf.takes_exceptions_argument else 2
        if not 2 <= len(node.args) <= most:
            fail(token, f"{token.value}() takes a code and an expression argument"
                        + (" and an optional exceptions flag" if most == 3 else ""))
        calls.append(PythonCall(leaf, function.name, token, node.args[0], node.args[1],
                                node.location))
    return calls


# --- evaluation ----------------------------------------------------------------------------

class Evaluator:
    """Evaluates straight-line string functions; Python calls go to ``run_python``.

    ``run_python(call, code, expr, exceptions_are_errors)`` returns the Python result string.
    """

    def __init__(self, program, run_python):
        self.program, self.run_python = program, run_python
        self.sites = {(c.token.file, c.token.line, c.token.value): c for c in program.calls}
        self.global_values = {}

    def call(self, name, arguments):
        """Evaluate a function with named ``arguments`` (names must match its inputs)."""
        function = self._function(name, None)
        names = [n for _, n in function.inputs]
        if sorted(arguments) != sorted(names):
            raise SwiftSourceError(f"{function.token.where()}: {name}({', '.join(names)}) called "
                                   f"with {sorted(arguments)}")
        return self._run(function, dict(arguments))

    def _function(self, name, token):
        if name not in self.program.functions:
            where = token.where() + ": " if token else ""
            raise SwiftSourceError(f"{where}no emulation of {name}()")
        return self.program.function(name)

    def _run(self, function, scope):
        if function.statements is None:
            raise SwiftSourceError(f"{function.token.where()}: {function.name} is not straight-"
                                   f"line code ({function.not_straight}); it cannot be evaluated")
        outputs = [name for _, name in function.outputs]
        for target, expression in function.statements:
            scope[target] = self.evaluate(expression, scope)
        missing = [name for name in outputs if name not in scope]
        if missing:
            raise SwiftSourceError(f"{function.token.where()}: {function.name} never assigns "
                                   f"{missing}")
        return scope[outputs[0]] if outputs else VOID

    def evaluate(self, node, scope):
        kind = node.kind
        if kind in ("str", "int", "bool"):
            return node.value
        if kind == "var":
            if node.value in scope:
                return scope[node.value]
            if node.value in self.program.globals:
                if node.value not in self.global_values:
                    self.global_values[node.value] = self.evaluate(
                        self.program.globals[node.value], {})
                return self.global_values[node.value]
            fail(node.token, f"{node.value} is not defined before it is used")
        if kind == "tuple":
            return tuple(self.evaluate(item, scope) for item in node.args)
        if kind == "+":
            left, right = (self.evaluate(arg, scope) for arg in node.args)
            if not (isinstance(left, str) and isinstance(right, str)):
                fail(node.token, "'+' is evaluated for strings only")
            return left + right
        if kind == "%":
            fmt, values = (self.evaluate(arg, scope) for arg in node.args)
            return sprintf(node.token, fmt, values if isinstance(values, tuple) else (values,))
        return self._call(node, scope)

    def _call(self, node, scope):
        name, token = node.value, node.token
        args = [self.evaluate(arg, scope) for arg in node.args]
        if name in self.program.leaves:
            leaf = self.program.leaves[name]
            call = self.sites[(token.file, token.line, name)]
            if not all(isinstance(a, str) for a in args[:2]):
                fail(token, f"{name}() needs string code and expression")
            exceptions = args[2] if len(args) == 3 else leaf.exceptions_are_errors
            return self.run_python(call, args[0], args[1], exceptions)
        if name == "replace_all":
            return replace_all(token, *args)
        if name == "propagate":
            return VOID
        function = self._function(name, token)
        names = [n for _, n in function.inputs]
        if len(args) != len(names):
            fail(token, f"{name}() takes {len(names)} arguments, got {len(args)}")
        return self._run(function, dict(zip(names, args)))


def replace_all(token, s, substring, replacement, start):
    """Turbine's replace_all: every non-overlapping occurrence, left to right, from ``start``."""
    if not all(isinstance(v, str) for v in (s, substring, replacement)) or not isinstance(
            start, int) or not substring:
        fail(token, "replace_all(string, non-empty string, string, int) expected")
    return s[:start] + s[start:].replace(substring, replacement)


def sprintf(token, fmt, values):
    """Swift/T's ``%`` operator (Tcl's format) for %s, %d/%i with flags and width, and %%."""
    if not isinstance(fmt, str):
        fail(token, "'%' needs a string format on its left")
    pieces, values = [], list(values)
    position = 0
    for match in re.finditer(r"%(%|[-0 +]*[0-9]*[sdi]|.)", fmt):
        pieces.append(fmt[position:match.start()])
        position = match.end()
        spec = match.group(1)
        if spec == "%":
            pieces.append("%")
            continue
        if spec[-1] not in "sdi":
            fail(token, f"the format %{spec} is outside what this reader evaluates")
        if not values:
            fail(token, f"too few arguments for the format {fmt!r}")
        value = values.pop(0)
        wanted = str if spec[-1] == "s" else int
        if not isinstance(value, wanted) or isinstance(value, bool):
            fail(token, f"%{spec} given {type(value).__name__}")
        pieces.append(("%" + spec.replace("i", "d")) % value)
    if values:
        fail(token, f"too many arguments for the format {fmt!r}")
    return "".join(pieces) + fmt[position:]
