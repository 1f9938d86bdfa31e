"""Reads mlrMBO's R ``makeParamSet(...)`` files: tokenized and parsed, never evaluated.

The subset understood is what CANDLE/Supervisor's mlrMBO workflows use::

    param.set <- makeParamSet(              # an assignment (<-, = or <<-) or the bare call
      makeNumericParam("lr", lower = 0.00001, upper = 0.1),
      makeIntegerParam("epochs", lower = 2, upper = 5),
      makeDiscreteParam("batch_size", values = c(16, 32, 64)),
      makeDiscreteParam("act", values = list("relu", "tanh")),
      makeLogicalParam("warmup")
    )

Arguments go by position (``id``, then ``lower``/``upper`` or ``values``) or by name. Values are
literals: numbers (``1e-5``, ``-2``, ``5L``), strings, ``TRUE``/``FALSE``, and ``c(...)`` or
``list(...)`` of them. ``default`` is accepted and ignored (it does not change the search);
``trafo``, ``requires`` and every other argument are refused with an error that names the file,
the line and column, the rule and the value. :func:`parse` returns plain
:class:`ParamSpec` records; :mod:`emews.space` turns them into parameters.
"""

import re
from dataclasses import dataclass

from .errors import ConfigError

MAKERS = {
    "makeNumericParam": ("float", ("id", "lower", "upper")),
    "makeIntegerParam": ("int", ("id", "lower", "upper")),
    "makeDiscreteParam": ("categorical", ("id", "values")),
    "makeLogicalParam": ("logical", ("id",)),
}
IGNORED = ("default",)
CONSTANTS = {"TRUE": True, "FALSE": False, "T": True, "F": False, "Inf": float("inf")}

TOKEN = re.compile(r"""
    (?P<space>[ \t\r\f]+|\n)
  | (?P<comment>\#[^\n]*)
  | (?P<number>(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)L?)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<name>[A-Za-z.][A-Za-z0-9._]*|`[^`]*`)
  | (?P<op><<-|<-|->|==|<=|>=|!=|&&|\|\||[-+*/^(),=\[\]{}:;$~!&|<>@?%])
""", re.VERBOSE)
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


@dataclass(frozen=True)
class Token:
    """One token and where it starts (1-based line and column)."""

    kind: str
    text: str
    line: int
    column: int


@dataclass(frozen=True)
class ParamSpec:
    """One ``make*Param`` call: its kind, id, literal arguments and where it starts."""

    kind: str
    name: str
    args: dict
    where: str


def tokenize(text, path):
    """Split R source into tokens, dropping spaces and comments."""
    tokens, line, line_start, position = [], 1, 0, 0
    while position < len(text):
        match = TOKEN.match(text, position)
        if match is None:
            raise ConfigError(f"{path}:{line}:{position - line_start + 1}",
                              "is not part of the makeParamSet subset of R", text[position])
        kind, value = match.lastgroup, match.group()
        if kind not in ("space", "comment"):
            tokens.append(Token(kind, value, line, position - line_start + 1))
        if value == "\n":
            line, line_start = line + 1, match.end()
        position = match.end()
    return tokens


def parse(text, path):
    """The parameters of the file's one ``makeParamSet(...)`` expression."""
    return _Parser(tokenize(text, path), path).param_set()


class _Parser:
    """Recursive descent over the tokens; every error names a position."""

    def __init__(self, tokens, path):
        self.tokens, self.path, self.position = tokens, path, 0

    def where(self, token=None):
        token = token or self.peek()
        if token is None:
            return f"{self.path}: at the end of the file"
        return f"{self.path}:{token.line}:{token.column}"

    def peek(self, offset=0):
        index = self.position + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def take(self, text=None, kind=None, rule=None):
        token = self.peek()
        if token is None or (text and token.text != text) or (kind and token.kind != kind):
            raise ConfigError(self.where(token), rule or f"expected {text or kind!r}",
                              token.text if token else "end of file")
        self.position += 1
        return token

    def param_set(self):
        rule = "must hold one makeParamSet(...) expression, optionally assigned to a name"
        if self.peek() is None:
            raise ConfigError(self.path, rule, "an empty file")
        if self.peek(1) is not None and self.peek(1).text in ("<-", "=", "<<-"):
            self.take(kind="name", rule=rule)
            self.position += 1
        self.take("makeParamSet", rule=rule)
        specs = []
        for token, name, _ in self.call_arguments():
            if name is not None:
                raise ConfigError(self.where(token), "makeParamSet takes make*Param(...) calls, "
                                  "not named arguments", name)
            specs.append(self.param_call())
        if self.peek() is not None and self.peek().text == ";":
            self.position += 1
        if self.peek() is not None:
            raise ConfigError(self.where(), "nothing may follow the makeParamSet(...) "
                              "expression", self.peek().text)
        if not specs:
            raise ConfigError(self.path, "makeParamSet(...) must hold at least one parameter",
                              "makeParamSet()")
        return specs

    def call_arguments(self):
        """Yield ``(first token, name or None, position)`` for each argument of a call.

        The caller parses each argument's value before the next one is looked at.
        """
        self.take("(")
        index = 0
        if self.peek() is not None and self.peek().text == ")":
            self.position += 1
            return
        while True:
            token, name = self.peek(), None
            following = self.peek(1)
            if token is not None and token.kind == "name" and following is not None \
                    and following.text == "=":
                name = token.text.strip("`")
                self.position += 2
            yield token, name, index
            index += 1
            closing = self.take(rule="expected ',' or ')' between arguments")
            if closing.text == ")":
                return
            if closing.text != ",":
                raise ConfigError(self.where(closing), "expected ',' or ')' between arguments",
                                  closing.text)

    def param_call(self):
        start = self.peek()
        maker = self.take(kind="name", rule=f"must be one of {', '.join(MAKERS)}").text
        if maker not in MAKERS:
            raise ConfigError(self.where(start), f"must be one of {', '.join(MAKERS)}", maker)
        kind, positional = MAKERS[maker]
        args = {}
        for token, name, index in self.call_arguments():
            if name is None:
                if index >= len(positional):
                    raise ConfigError(self.where(token), f"{maker} takes at most "
                                      f"{len(positional)} unnamed arguments "
                                      f"({', '.join(positional)})", token.text)
                name = positional[index]
            if name not in positional + IGNORED:
                raise ConfigError(self.where(token), f"{maker}: argument {name!r} is not "
                                  f"supported (supported: {', '.join(positional + IGNORED)}); "
                                  "for a log scale use a GA JSON space with \"log\": true", name)
            if name in args:
                raise ConfigError(self.where(token), f"{maker}: argument {name!r} is given "
                                  "twice", name)
            args[name] = (self.value(), self.where(token))
        if "id" not in args:
            raise ConfigError(self.where(start), f"{maker} needs an id (the parameter name)",
                              None)
        name, name_where = args.pop("id")
        if not isinstance(name, str) or not name:
            raise ConfigError(name_where, f"{maker}: the id must be a non-empty string", name)
        for ignored in IGNORED:
            args.pop(ignored, None)
        return ParamSpec(kind, name, args, self.where(start))

    def value(self):
        """A literal, or ``c(...)``/``list(...)`` of literals (returned as a list)."""
        token = self.peek()
        if token is None:
            raise ConfigError(self.where(), "expected a value", "end of file")
        if token.text in ("c", "list") and self.peek(1) is not None and self.peek(1).text == "(":
            self.position += 1
            values = []
            for item, _, _ in self.call_arguments():
                element = self.value()
                if isinstance(element, list):
                    raise ConfigError(self.where(item), "nested c()/list() is not supported",
                                      item.text)
                values.append(element)
            return values
        sign = 1
        while token is not None and token.text in ("-", "+"):
            sign = -sign if token.text == "-" else sign
            self.position += 1
            token = self.peek()
        if token is not None and token.kind == "number":
            self.position += 1
            return sign * _number(token.text)
        if token is not None and token.text in CONSTANTS and not isinstance(CONSTANTS[token.text],
                                                                            bool):
            self.position += 1
            return sign * CONSTANTS[token.text]
        if sign == 1 and token is not None and token.kind == "string":
            self.position += 1
            return _string(token.text)
        if sign == 1 and token is not None and token.text in CONSTANTS:
            self.position += 1
            return CONSTANTS[token.text]
        raise ConfigError(self.where(token), "must be a literal (number, string, TRUE/FALSE) or "
                          "c(...)/list(...) of literals; R code is never evaluated",
                          token.text if token else "end of file")


def _number(text):
    """An R numeric literal as int (whole numbers and ``L`` literals) or float."""
    body = text[:-1] if text.endswith("L") else text
    value = float(int(body, 16)) if body[:2].lower() == "0x" else float(body)
    return int(value) if value.is_integer() else value


def _string(text):
    body, out, i = text[1:-1], [], 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            out.append(ESCAPES.get(body[i + 1], body[i + 1]))
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)
