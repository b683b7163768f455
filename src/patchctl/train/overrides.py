"""Hydra's command-line override grammar, checked without hydra.

verl's ``main_ppo`` hands every override to hydra, which refuses a malformed one only after the
driver has started (Ray, workers, sometimes a GPU allocation). patchctl checks them first, as
hydra 1.3 would parse them: :mod:`.overridelex` ports ``hydra/grammar/OverrideLexer.g4``
(longest-match lexer with a key mode and a value mode), this module ``OverrideParser.g4`` (a
recursive-descent parser), plus the checks hydra makes right after parsing in a single run
(no sweeps, known functions, a non-empty key). hydra-core is only a test dependency of
patchctl, and ``tests/train/test_train_overrides.py`` compares this port with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from patchctl.train.overridelex import BadOverride, Token, tokens

__all__ = ["BadOverride", "Override", "parse", "parse_all"]

#: tokens a primitive is made of (a QUOTED_VALUE stands alone); a dict key also excludes these two
PRIMITIVE = frozenset({"ID", "NULL", "INT", "FLOAT", "BOOL", "INTERPOLATION", "UNQUOTED_CHAR", "COLON", "ESC", "WS"})
DICT_KEY = PRIMITIVE - {"COLON", "INTERPOLATION"}
#: the functions hydra 1.3 registers (``OverridesParser.create``); a call of any other is an error
FUNCTIONS = frozenset({"bool", "choice", "float", "glob", "int", "interval", "range", "shuffle", "sort", "str", "tag"})
#: the functions that make a sweep, which a single run (no --multirun) refuses
SWEEPS = frozenset({"choice", "glob", "interval", "range"})


@dataclass(frozen=True)
class Override:
    """One parsed override: ``+a.b=1`` is prefix ``+``, key ``a.b``, value ``1``."""

    text: str
    #: "" (change a key), "+" (add one), "++" (add or change) or "~" (delete)
    prefix: str
    #: the dotted key, or ``group/name`` for a config group
    key: str
    #: the package after ``@`` (``actor@actor_rollout_ref.actor``), if any
    package: str | None
    #: the value as written, None for ``~key`` without ``=``
    value: str | None

    @property
    def is_group(self) -> bool:
        """A config-group choice (``hydra/launcher=basic``, ``actor@...=dp_actor``) rather than a value."""
        return "/" in self.key or self.package is not None


class _Parser:
    """Recursive descent over the tokens, one method per rule of ``OverrideParser.g4``."""

    def __init__(self, override: str) -> None:
        self.text, self.tokens, self.i = override, tokens(override), 0
        #: the value is ``a,b`` (a simple choice sweep)
        self.sweep = False
        #: the function the whole value is a call of (``choice`` of ``x=choice(1,2)``), if any
        self.outer: str | None = None
        #: every function called anywhere in the value
        self.functions: list[str] = []

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.tokens[j].kind if j < len(self.tokens) else "EOF"

    def take(self, kind: str, expected: str) -> Token:
        if self.peek() != kind:
            self.fail(expected)
        self.i += 1
        return self.tokens[self.i - 1]

    def fail(self, expected: str) -> NoReturn:
        if self.i < len(self.tokens):
            t = self.tokens[self.i]
            raise BadOverride(
                self.text,
                f"unexpected {t.text.strip() or t.text!r} at column {t.at + 1} ({expected})",
                "check the brackets, quotes and commas; quote a value with special characters, e.g. key='a b'",
            )
        raise BadOverride(
            self.text, f"it ends before the value is complete ({expected})", "close every [, ( and { and every quote"
        )

    def override(self) -> Override:
        prefix = ""
        if self.peek() == "TILDE":
            prefix = self.take("TILDE", "").text
        elif self.peek() == "PLUS":
            prefix = self.take("PLUS", "").text + (self.take("PLUS", "").text if self.peek() == "PLUS" else "")
        key, package = self.key()
        value: str | None = None
        if prefix != "~" or self.peek() == "EQUAL":
            if self.peek() == "EOF":
                raise BadOverride(self.text, "no '=' after the key")
            equal = self.take("EQUAL", "expected '=' after the key")
            value = self.text[equal.at + len(equal.text) :]
            self.value()
        if self.peek() != "EOF":
            self.fail("expected the end of the override")
        return Override(self.text, prefix, key, package, value)

    def key(self) -> tuple[str, str | None]:
        """``packageOrGroup (AT package)?``: a dotted key, or ``group/name``, then ``@package``."""
        if self.peek() == "ID" and self.peek(1) == "SLASH":
            parts = [self.take("ID", "").text]
            while self.peek() == "SLASH":
                self.take("SLASH", "")
                parts.append(self.take("ID", "expected a group name after /").text)
            key = "/".join(parts)
        else:
            key = self.package()
        package = None
        if self.peek() == "AT":
            self.take("AT", "")
            package = self.package()
        return key, package

    def package(self) -> str:
        """``( | ID | KEY_SPECIAL | DOT_PATH)``: may be empty (hydra's global package)."""
        if self.peek() in ("ID", "KEY_SPECIAL", "DOT_PATH"):
            self.i += 1
            return self.tokens[self.i - 1].text
        return ""

    def value(self) -> None:
        """``element | element (COMMA element)+``, or nothing (``key=`` sets an empty string)."""
        if self.peek() == "EOF":
            return
        if self.peek() == "ID" and self.peek(1) == "POPEN":
            self.outer = self.tokens[self.i].text
        self.element()
        while self.peek() == "COMMA":
            self.take("COMMA", "")
            self.element()
            self.sweep = True

    def element(self) -> None:
        kind = self.peek()
        if kind == "ID" and self.peek(1) == "POPEN":
            self.function()
        elif kind == "BRACKET_OPEN":
            self.container("BRACKET_OPEN", "BRACKET_CLOSE", self.element, "expected ] or ,")
        elif kind == "BRACE_OPEN":
            self.container("BRACE_OPEN", "BRACE_CLOSE", self.pair, "expected } or ,")
        elif kind == "QUOTED_VALUE":
            self.i += 1
        elif kind in PRIMITIVE:
            while self.peek() in PRIMITIVE:
                self.i += 1
        else:
            self.fail("expected a value")

    def container(self, open_: str, close: str, item: Callable[[], None], expected: str) -> None:
        self.take(open_, "")
        if self.peek() != close:
            item()
            while self.peek() == "COMMA":
                self.take("COMMA", "")
                item()
        self.take(close, expected)

    def pair(self) -> None:
        """``dictKey COLON element``."""
        if self.peek() not in DICT_KEY:
            self.fail("expected a dict key")
        while self.peek() in DICT_KEY:
            self.i += 1
        self.take("COLON", "expected : after the dict key")
        self.element()

    def function(self) -> None:
        """``ID POPEN (argName? element (COMMA argName? element)*)? PCLOSE``."""
        self.functions.append(self.take("ID", "").text)
        self.take("POPEN", "")
        if self.peek() != "PCLOSE":
            self.argument()
            while self.peek() == "COMMA":
                self.take("COMMA", "")
                self.argument()
        self.take("PCLOSE", "expected ) or ,")

    def argument(self) -> None:
        if self.peek() == "ID" and self.peek(1) == "EQUAL":
            self.i += 2
        self.element()


def parse(override: str) -> Override:
    """One override as hydra reads it, or :class:`BadOverride` saying what hydra would refuse."""
    parser = _Parser(override)
    parsed = parser.override()
    if not parsed.key and not parsed.package:
        raise BadOverride(override, "there is no key")
    # shuffle(choice(...)) and sort(range(...)) are sweeps too
    wrapped = parser.outer in ("shuffle", "sort") and bool(SWEEPS & set(parser.functions))
    if parser.sweep or parser.outer in SWEEPS or wrapped:
        raise BadOverride(
            override,
            "it is a sweep, which a single run refuses",
            "write a list as key=[a,b], or quote the value as key='a,b'",
        )
    unknown = sorted(set(parser.functions) - FUNCTIONS)
    if unknown:
        raise BadOverride(
            override,
            f"{unknown[0]}(...) is not a hydra function",
            f"quote the value, e.g. {parsed.prefix}{parsed.key}='{parsed.value}'",
        )
    return parsed


def parse_all(overrides: list[str] | tuple[str, ...]) -> list[Override]:
    return [parse(o) for o in overrides]
