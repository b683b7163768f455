"""The lexer half of hydra's override grammar (``hydra/grammar/OverrideLexer.g4``), without hydra.

An override is lexed in two modes, as ANTLR does: the key until the first ``=``, then the value,
each position taking the longest match and a tie going to the earlier rule. :mod:`.overrides`
parses the tokens; a character neither mode has a token for is refused here, with the fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from patchctl.errors import PatchctlError

_IU = r"(?:0|[1-9](?:_?[0-9])*)"  # INT_UNSIGNED
_DIGITS = r"[0-9](?:_?[0-9])*"
_POINT = rf"(?:{_IU}?\.{_DIGITS}|{_IU}\.)"
_EXP = rf"(?:(?:{_POINT}|{_IU})[eE][+-]?{_DIGITS})"
_KEY_SPECIAL = r"[A-Za-z_$][A-Za-z0-9_$-]*"
_WS = r"[ \t]*"

#: DEFAULT_MODE (the key), in the grammar's order: a tie in length goes to the earlier rule
KEY_TOKENS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (n, re.compile(p))
    for n, p in (
        ("EQUAL", r"=[ \t]*"),
        ("TILDE", r"~"),
        ("PLUS", r"\+"),
        ("AT", "@"),
        ("COLON", ":"),
        ("SLASH", "/"),
        ("ID", r"[A-Za-z_][A-Za-z0-9_-]*"),
        ("KEY_SPECIAL", _KEY_SPECIAL),
        ("DOT_PATH", rf"(?:{_KEY_SPECIAL}|{_IU})(?:\.(?:{_KEY_SPECIAL}|{_IU}))+"),
    )
)
#: VALUE_MODE, in the grammar's order
VALUE_TOKENS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (n, re.compile(p, re.S))
    for n, p in (
        ("POPEN", rf"{_WS}\({_WS}"),
        ("COMMA", rf"{_WS},{_WS}"),
        ("PCLOSE", rf"{_WS}\)"),
        ("BRACKET_OPEN", rf"\[{_WS}"),
        ("BRACKET_CLOSE", rf"{_WS}\]"),
        ("BRACE_OPEN", rf"\{{{_WS}"),
        ("BRACE_CLOSE", rf"{_WS}\}}"),
        ("COLON", rf"{_WS}:{_WS}"),
        ("EQUAL", rf"{_WS}={_WS}"),
        ("FLOAT", rf"[+-]?(?:{_EXP}|{_POINT}|[Ii][Nn][Ff]|[Nn][Aa][Nn])"),
        ("INT", rf"[+-]?{_IU}"),
        ("BOOL", r"(?i:true|false)"),
        ("NULL", r"(?i:null)"),
        ("UNQUOTED_CHAR", r"[/\-\\+.$%*@?|]"),
        ("ID", r"[A-Za-z_][A-Za-z0-9_-]*"),
        ("ESC", r"(?:\\\\|\\[()\[\]{}:=, \t])+"),
        ("WS", r"[ \t]+"),
        ("QUOTED_VALUE", r"\"(?:(?:\\\\)*|.*?[^\\](?:\\\\)*)\"|'(?:(?:\\\\)*|.*?[^\\](?:\\\\)*)'"),
        ("INTERPOLATION", r"\$\{[^}]+\}"),
    )
)


class BadOverride(PatchctlError):
    """An override hydra would refuse; said before anything starts."""

    def __init__(self, override: str, problem: str, fix: str = "write KEY=VALUE, e.g. trainer.total_epochs=2") -> None:
        self.override, self.problem = override, problem
        super().__init__(f"override {override!r}: {problem}; {fix}")


@dataclass(frozen=True)
class Token:
    """One lexed piece of an override; ``at`` is its 0-based column, for the error message."""

    kind: str
    text: str
    at: int


def tokens(text: str) -> list[Token]:
    """Longest match per position, ties to the earlier rule, as an ANTLR lexer does."""
    out: list[Token] = []
    table, pos = KEY_TOKENS, 0
    while pos < len(text):
        best: tuple[int, str] | None = None
        for kind, pattern in table:
            m = pattern.match(text, pos)
            if m and m.end() > pos and (best is None or m.end() > best[0]):
                best = (m.end(), kind)
        if best is None:
            raise BadOverride(
                text,
                f"hydra cannot read {text[pos : pos + 10]!r} at column {pos + 1}",
                _char_fix(text[pos], in_key=table is KEY_TOKENS),
            )
        out.append(Token(best[1], text[pos : best[0]], pos))
        if best[1] == "EQUAL" and table is KEY_TOKENS:
            table = VALUE_TOKENS
        pos = best[0]
    return out


def _char_fix(ch: str, in_key: bool) -> str:
    """What to do about a character hydra's lexer has no token for."""
    if in_key and ch in " \t":
        return "no spaces in the key; write KEY=VALUE as one argument, e.g. trainer.n_gpus_per_node=2"
    if in_key:
        return "a key is names of letters, digits, _ and - joined by dots, e.g. trainer.n_gpus_per_node"
    if ch in "'\"":
        return "close the quote"
    return "quote the value, e.g. key='...'"
