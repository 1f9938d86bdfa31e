"""Reads mlrMBO's R ``makeParamSet(...)`` files: tokenized and parsed, never evaluated.

The subset understood is what CANDLE/Supervisor's mlrMBO workflows use (docs/src/spaces.md)::

    param.set <- makeParamSet(              # an assignment (<-, = or <<-) or the bare call
      makeIntegerParam("epochs", lower = 2, upper = 5),
      makeDiscreteParam("act", values = list("relu", "tanh")),
      makeIntegerParam("latent_dim", lower = 1, upper = 9, trafo = function(x) 2L^x)
    )

Arguments go by position (``id``, then ``lower``/``upper`` or ``values``) or by name (the
:data:`MAKERS`). Values are literals: numbers (``1e-5``, ``-2``, ``5L``, ``-Inf``), strings,
``TRUE``/``FALSE``, and ``c(...)`` or ``list(...)`` of them; ``default`` is ignored. ``trafo``
is parsed into a :class:`Trafo`, and ``requires`` into an :mod:`emews._conditions` condition,
by these grammars and only by them::

    trafo   := "function" "(" NAME ")" ( body | "{" body "}" )
    body    := product (("+" | "-") product)*
    product := unary (("*" | "/") unary)*
    unary   := ("-" | "+") unary | power
    power   := atom ("^" unary)?                  # right-associative, above unary minus, as in R
    atom    := NUMBER | NAME | "(" body ")" | ("exp" | "round" | "as.integer") "(" body ")"

    requires := ("quote" | "expression") "(" either ")"
    either   := both (("||" | "|") both)*
    both     := negation (("&&" | "&") negation)*
    negation := "!" negation | "(" either ")" | test
    test     := PARAM (("==" | "!=" | "<" | "<=" | ">" | ">=") literal | "%in%" values)?
    values   := literal | "c" "(" literal ("," literal)* ")"

where NAME is the function's argument and PARAM another parameter (alone, a logical one that
is ``TRUE``). Anything else is refused with an error that names the file, the line and column,
the parameter, the rule and the text. :func:`parse` returns :class:`ParamSpec` records.
"""

import itertools
import math
import operator
import re
from collections import namedtuple
from dataclasses import dataclass

from .. import _conditions as conditions
from .._errors import ConfigError

MAKERS = {  # maker: (kind, positional arguments, named-only arguments)
    "makeNumericParam": ("float", ("id", "lower", "upper"), ("default", "trafo", "requires")),
    "makeIntegerParam": ("int", ("id", "lower", "upper"), ("default", "trafo", "requires")),
    "makeDiscreteParam": ("categorical", ("id", "values"), ("default", "requires")),
    "makeLogicalParam": ("logical", ("id",), ("default", "requires")),
}
TRAFO_RULE = ("must be function(x) built from numbers, x, + - * / ^, parentheses, exp(), round() "
              "and as.integer(); R code is never evaluated")
CONSTANTS = {"TRUE": True, "FALSE": False, "T": True, "F": False, "Inf": float("inf")}

TOKEN = re.compile(r"""
    (?P<space>[ \t\r\f]+|\n)
  | (?P<comment>\#[^\n]*)
  | (?P<number>(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)L?)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<name>[A-Za-z.][A-Za-z0-9._]*|`[^`]*`)
  | (?P<op>%[^%\n]*%|<<-|<-|->|==|<=|>=|!=|&&|\|\||[-+*/^(),=\[\]{}:;$~!&|<>@?%])
""", re.VERBOSE)
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}
ESCAPE = re.compile(r"\\(.)")
# one token and where it starts (1-based line and column, 0-based offset in the text)
Token = namedtuple("Token", "kind text line column offset")
# one make*Param call: its kind, id, literal arguments and where it starts
ParamSpec = namedtuple("ParamSpec", "kind name args where")


def parse(text, path):
    """The parameters of the file's one ``makeParamSet(...)`` expression."""
    return _Parser(tokenize(text, path), path, text).param_set()


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
            tokens.append(Token(kind, value, line, position - line_start + 1, position))
        if value == "\n":
            line, line_start = line + 1, match.end()
        position = match.end()
    return tokens


class _Cursor:
    """A position in a list of tokens (``self.tokens``, ``self.position``)."""

    def peek(self, offset=0):
        index = self.position + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def accept(self, *texts):
        """The next token, taken, when its text is one of ``texts``; else None."""
        token = self.peek()
        if token is None or token.text not in texts:
            return None
        self.position += 1
        return token


class _Parser(_Cursor):
    """Recursive descent over the tokens; every error names a position."""

    def __init__(self, tokens, path, text):
        self.tokens, self.path, self.text, self.position = tokens, path, text, 0

    def where(self, token=None):
        token = token or self.peek()
        if token is None:
            return f"{self.path}: at the end of the file"
        return f"{self.path}:{token.line}:{token.column}"

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
        self.accept(";")
        if self.peek() is not None:
            raise ConfigError(self.where(), "nothing may follow the makeParamSet(...) "
                              "expression", self.peek().text)
        if not specs:
            raise ConfigError(self.path, "makeParamSet(...) must hold at least one parameter",
                              "makeParamSet()")
        return specs

    def call_arguments(self):
        """Yield ``(first token, name or None, position)`` for each argument of a call; the
        caller parses each argument's value before the next one is looked at."""
        self.take("(")
        if self.accept(")"):
            return
        for index in itertools.count():
            token, name, following = self.peek(), None, self.peek(1)
            if token is not None and token.kind == "name" and following is not None \
                    and following.text == "=":
                name = token.text.strip("`")
                self.position += 2
            yield token, name, index
            if self.accept(")"):
                return
            self.take(",", rule="expected ',' or ')' between arguments")

    def param_call(self):
        start = self.peek()
        maker = self.take(kind="name", rule=f"must be one of {', '.join(MAKERS)}").text
        if maker not in MAKERS:
            raise ConfigError(self.where(start), f"must be one of {', '.join(MAKERS)}", maker)
        kind, positional, named = MAKERS[maker]
        args = {}
        for token, name, index in self.call_arguments():
            if name is None:
                if index >= len(positional):
                    raise ConfigError(self.where(token), f"{maker} takes at most "
                                      f"{len(positional)} unnamed arguments "
                                      f"({', '.join(positional)})", token.text)
                name = positional[index]
            if name not in positional + named:
                raise ConfigError(self.where(token), f"{maker}: argument {name!r} is not "
                                  f"supported (supported: {', '.join(positional + named)})", name)
            if name in args:
                raise ConfigError(self.where(token), f"{maker}: argument {name!r} is given "
                                  "twice", name)
            value = self.argument_span() if name in ("trafo", "requires") else self.value()
            args[name] = (value, self.where(token))
        if "id" not in args:
            raise ConfigError(self.where(start), f"{maker} needs an id (the parameter name)",
                              None)
        name, name_where = args.pop("id")
        if not isinstance(name, str) or not name:
            raise ConfigError(name_where, f"{maker}: the id must be a non-empty string", name)
        args.pop("default", None)   # accepted, and ignored: it does not change the search
        for argument, parser in (("trafo", _TrafoParser), ("requires", _RequiresParser)):
            if argument in args:
                (first, end), at = args[argument]
                args[argument] = (parser(self, first, end, name).parse(), at)
        return ParamSpec(kind, name, args, self.where(start))

    def argument_span(self):
        """Skip one argument's tokens (brackets balanced); return their ``(first, end)`` indices."""
        first, depth = self.position, 0
        while True:
            token = self.peek()
            if token is None:
                raise ConfigError(self.where(), "expected ',' or ')' between arguments",
                                  "end of file")
            if depth == 0 and token.text in (",", ")"):
                return first, self.position
            depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(token.text, 0)
            self.position += 1

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
        value = _literal(self)
        if value is None:
            token = self.peek()
            raise ConfigError(self.where(token), "must be a literal (number, string, TRUE/FALSE) "
                              "or c(...)/list(...) of literals; R code is never evaluated",
                              token.text if token else "end of file")
        return value


def _literal(reader):
    """The literal at ``reader``'s position, taken: a number or ``Inf`` after any run of signs
    (R reads ``-+-1`` as 1), or an unsigned string, ``TRUE`` or ``FALSE``; ``None`` where there
    is none (the signs taken)."""
    sign, signed = 1, False
    while (token := reader.peek()) is not None and token.text in ("-", "+"):
        sign, signed = -sign if token.text == "-" else sign, True
        reader.position += 1
    constant = CONSTANTS.get(token.text) if token is not None else None
    if token is not None and (token.kind == "number" or constant == math.inf):
        value = sign * (_number(token.text) if token.kind == "number" else constant)
    elif token is not None and not signed and token.kind == "string":   # its escapes replaced
        value = ESCAPE.sub(lambda match: ESCAPES.get(match[1], match[1]), token.text[1:-1])
    elif not signed and isinstance(constant, bool):
        value = constant
    else:
        return None
    reader.position += 1
    return value


def _number(text):
    """An R numeric literal as int (whole numbers and ``L`` literals) or float."""
    body = text[:-1] if text.endswith("L") else text
    value = float(int(body, 16)) if body[:2].lower() == "0x" else float(body)
    return int(value) if value.is_integer() else value


CALLS = {"neg": operator.neg, "+": operator.add, "-": operator.sub, "*": operator.mul,
         "/": operator.truediv, "exp": math.exp, "round": round, "as.integer": int}
FUNCTIONS = ("exp", "round", "as.integer")
MAX_EXACT_EXPONENT = 1024


@dataclass(frozen=True)
class Trafo:
    """A parsed ``trafo = function(x) ...``: ``text`` as written and ``tree``, its syntax tree.

    Calling it walks the tree; nothing is ever evaluated as code. Integers stay integers where
    the arithmetic allows (``2L^x`` of an integer ``x`` is an int, ``2^-1`` is 0.5) and
    ``round``/``as.integer`` give ints (R rounds half to even, as Python does; ``as.integer``
    truncates toward zero). A result that is not a finite real number raises ``ValueError``.
    """

    text: str
    tree: tuple

    def __call__(self, x):
        try:
            value = _evaluate(self.tree, x)
            if not math.isfinite(value):
                raise ValueError
        except (ArithmeticError, ValueError):
            raise ValueError(f"not a finite real number at x = {x!r}") from None
        return value


def _evaluate(node, x):
    head, *children = node
    if head == "number":
        return children[0]
    if head == "x":
        return x
    values = [_evaluate(child, x) for child in children]
    if head != "^":
        return CALLS[head](*values)
    base, exponent = values   # R's ^: exact for integers (a negative exponent gives a float)
    if isinstance(base, int) and isinstance(exponent, int) and abs(exponent) <= MAX_EXACT_EXPONENT:
        return base ** exponent
    return math.pow(base, exponent)


class _ArgumentParser(_Cursor):
    """Recursive descent over the tokens of one argument of a ``make*Param`` call."""

    RULE = ""
    ARGUMENT = ""

    def __init__(self, parser, first, end, name):
        self.parser, self.name = parser, name
        self.tokens, self.position = parser.tokens[first:end], 0
        self.last = parser.tokens[end - 1] if end > first else parser.tokens[first]
        start, stop = parser.tokens[first].offset, self.last.offset + len(self.last.text)
        self.text = parser.text[start:stop] if end > first else ""   # as written

    def fail(self):
        token = self.peek() or self.last
        raise ConfigError(f"{self.parser.where(token)}: {self.name}.{self.ARGUMENT}", self.RULE,
                          self.text)

    def expect(self, text):
        if self.accept(text) is None:
            self.fail()


class _TrafoParser(_ArgumentParser):
    """The ``trafo`` argument, by the grammar at the top of the module."""

    RULE = TRAFO_RULE
    ARGUMENT = "trafo"

    def parse(self):
        self.expect("function")
        self.expect("(")
        if self.peek() is None or self.peek().kind != "name":
            self.fail()
        self.argument = self.peek().text
        self.position += 1
        self.expect(")")
        braced = self.accept("{")
        tree = self.sum()
        if braced:
            self.expect("}")
        if self.peek() is not None:
            self.fail()
        return Trafo(self.text, tree)

    def sum(self):
        tree = self.product()
        while (operator_token := self.accept("+", "-")) is not None:
            tree = (operator_token.text, tree, self.product())
        return tree

    def product(self):
        tree = self.unary()
        while (operator_token := self.accept("*", "/")) is not None:
            tree = (operator_token.text, tree, self.unary())
        return tree

    def unary(self):
        sign = self.accept("-", "+")
        if sign is None:
            return self.power()
        operand = self.unary()
        return ("neg", operand) if sign.text == "-" else operand

    def power(self):
        base = self.atom()
        return ("^", base, self.unary()) if self.accept("^") is not None else base

    def atom(self):
        token = self.peek()
        if token is not None and token.kind == "number":
            self.position += 1
            return ("number", _number(token.text))
        if token is not None and token.text == self.argument:
            self.position += 1
            return ("x",)
        function = self.accept(*FUNCTIONS)
        if function is not None:
            self.expect("(")
        elif self.accept("(") is None:
            return self.fail()
        tree = self.sum()
        self.expect(")")
        return tree if function is None else (function.text, tree)


REQUIRES_RULE = ("must be quote(...) or expression(...) of tests on other parameters (==, !=, <, "
                 "<=, >, >= a literal; %in% c(...) of literals; a logical parameter alone) "
                 "joined by &&, ||, &, |, ! and parentheses; R code is never evaluated")
COMPARISON_OPERATORS = ("==", "!=", "<", "<=", ">", ">=")


class _RequiresParser(_ArgumentParser):
    """The ``requires`` argument, by the module's grammar, into an :mod:`emews._conditions` test."""

    RULE = REQUIRES_RULE
    ARGUMENT = "requires"

    def parse(self):
        if self.accept("quote", "expression") is None:
            self.fail()
        self.expect("(")
        condition = self.either()
        self.expect(")")
        if self.peek() is not None:
            self.fail()
        return condition

    def either(self):
        terms = [self.both()]
        while self.accept("||", "|") is not None:
            terms.append(self.both())
        return terms[0] if len(terms) == 1 else conditions.AnyOf(tuple(terms))

    def both(self):
        terms = [self.negation()]
        while self.accept("&&", "&") is not None:
            terms.append(self.negation())
        return conditions.every(terms)

    def negation(self):
        if self.accept("!") is not None:
            return conditions.Not(self.negation())
        if self.accept("(") is not None:
            condition = self.either()
            self.expect(")")
            return condition
        return self.test()

    def test(self):
        token = self.peek()
        following = self.peek(1)
        if (token is None or token.kind != "name" or token.text in CONSTANTS
                or (following is not None and following.text == "(")):
            self.fail()
        self.position += 1
        parent = token.text.strip("`")
        operator_token = self.accept(*COMPARISON_OPERATORS, "%in%")
        if operator_token is None:
            return conditions.In(parent, (True,))
        if operator_token.text == "%in%":
            return conditions.In(parent, self.values())
        value = self.literal()
        if operator_token.text in ("==", "!="):
            test = conditions.In(parent, (value,))
            return test if operator_token.text == "==" else conditions.Not(test)
        if isinstance(value, (str, bool)):
            self.position -= 1
            self.fail()
        return conditions.Compare(parent, operator_token.text, value)

    def values(self):
        if self.accept("c") is None:
            return (self.literal(),)
        self.expect("(")
        values = [self.literal()]
        while self.accept(",") is not None:
            values.append(self.literal())
        self.expect(")")
        return tuple(values)

    def literal(self):
        value = _literal(self)
        return self.fail() if value is None else value
