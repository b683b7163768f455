"""Counting the steps a backtracking regex engine takes, to tell linear patterns from super-linear ones.

Python's ``re`` backtracks: a pattern such as ``NET/(?:Socket|IB).*failed`` searched in a line of
``NET/Socket `` repeated restarts at every ``NET/``, and each start's ``.*`` runs to the end of the
line and back: quadratic in the line's length. Timing that in a test is flaky on a loaded machine,
so this module models the engine instead: it compiles the parsed pattern (``re``'s own parser) to
a small backtracking machine that explores the alternatives in the order ``re`` does (greedy
first, branches left to right, search from each start) and counts each instruction, each
character a repeat consumes and each position it gives back. The count is exact and the same on
any machine; its growth with the line's length is the engine's.

Like ``re``, a single-character repeat (``.*``, ``\\d+``, ``[^"]*``) consumes its run at once and
gives it back one position at a time, a pattern starting with ``^`` is tried at position 0 only, and
a start whose first character cannot begin a match costs one step. Back-references and conditional
groups are not modelled (no doctor pattern uses them): :class:`Unsupported`.

:func:`adversarial` builds, from a pattern's own pieces, the lines that make such patterns slow: a
literal run, a prefix that matches, or a repeat's character, repeated, then a character that ends
the match attempt (the classic prefix + repeated fragment + failing tail).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

if sys.version_info >= (3, 11):
    from re import _constants as C
    from re import _parser
else:  # pragma: no cover
    import sre_constants as C
    import sre_parse as _parser

MAXREPEAT = C.MAXREPEAT
#: a counted repeat is unrolled; more copies than this is not modelled
MAX_UNROLL = 2000
#: characters tried, in order, as the sample of a character class
SAMPLES = "a1 .[(\"'/:_-=xZ<>,;@#%&*+?!|~\\)]}{\t"

# machine instructions
CHAR, RUN, SPLIT, JMP, AT, LOOK, ATOMIC, MARK, PROGRESS, MATCH = range(10)
# kinds of backtrack entries
_RESUME, _GIVE_BACK, _TAKE_MORE = range(3)


class Unsupported(Exception):
    """The pattern uses a construct the model does not have."""


class OverBudget(Exception):
    """The search took more steps than allowed (a runaway pattern)."""


class CharTest:
    """Whether a character matches one position of a pattern (a literal, a class, ``.``), cached."""

    def __init__(self, test: Callable[[str], bool], ignorecase: bool) -> None:
        self._test = test
        self._icase = ignorecase
        self._seen: dict[str, bool] = {}

    def __call__(self, ch: str) -> bool:
        got = self._seen.get(ch)
        if got is None:
            t = self._test
            got = t(ch) or (self._icase and (t(ch.lower()) or t(ch.upper()) or t(ch.swapcase())))
            self._seen[ch] = got
        return got

    def sample(self) -> str | None:
        """A character it accepts (printable ASCII first), or None."""
        return next((ch for ch in SAMPLES if self(ch)), None) or next(
            (chr(c) for c in range(32, 0x250) if self(chr(c))), None
        )


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


_CATEGORY: dict[Any, Callable[[str], bool]] = {
    C.CATEGORY_DIGIT: str.isdecimal,
    C.CATEGORY_NOT_DIGIT: lambda ch: not ch.isdecimal(),
    C.CATEGORY_SPACE: str.isspace,
    C.CATEGORY_NOT_SPACE: lambda ch: not ch.isspace(),
    C.CATEGORY_WORD: _is_word,
    C.CATEGORY_NOT_WORD: lambda ch: not _is_word(ch),
}


def _is(c: str) -> Callable[[str], bool]:
    return lambda ch: ch == c


def _is_not(c: str) -> Callable[[str], bool]:
    return lambda ch: ch != c


def _class_test(items: Any) -> Callable[[str], bool]:
    negate = False
    parts: list[Callable[[str], bool]] = []
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            parts.append(_is(chr(av)))
        elif op is C.NOT_LITERAL:
            parts.append(_is_not(chr(av)))
        elif op is C.RANGE:
            parts.append(lambda ch, lo=av[0], hi=av[1]: lo <= ord(ch) <= hi)
        elif op is C.CATEGORY:
            parts.append(_CATEGORY[av])
        else:
            raise Unsupported(f"class item {op}")
    return lambda ch: any(p(ch) for p in parts) != negate


@dataclass
class Program:
    code: list[tuple[Any, ...]]
    #: tried at position 0 only (``^`` or ``\\A`` first, as ``re`` does)
    anchored: bool
    #: what the first character of a match must be, when the pattern says (else None)
    first: CharTest | None


class Compiler:
    def __init__(self) -> None:
        self.registers = 0

    def program(self, nodes: Any, flags: int) -> list[tuple[Any, ...]]:
        code: list[tuple[Any, ...]] = []
        self._emit(code, nodes, flags)
        code.append((MATCH,))
        return code

    def char_test(self, op: Any, av: Any, flags: int) -> CharTest | None:
        icase = bool(flags & re.IGNORECASE)
        if op is C.LITERAL:
            return CharTest(_is(chr(av)), icase)
        if op is C.NOT_LITERAL:  # "[^x]" under IGNORECASE excludes both cases of x
            c = chr(av)
            return CharTest(lambda ch: ch != c and (not icase or ch.lower() != c.lower()), False)
        if op is C.ANY:
            return CharTest((lambda ch: True) if flags & re.DOTALL else (lambda ch: ch != "\n"), False)
        if op is C.IN:
            return CharTest(_class_test(av), icase)
        return None

    def _emit(self, code: list[tuple[Any, ...]], nodes: Any, flags: int) -> None:
        for op, av in nodes:
            test = self.char_test(op, av, flags)
            if test is not None:
                code.append((CHAR, test))
            elif op is C.AT:
                code.append((AT, av, bool(flags & re.MULTILINE)))
            elif op is C.SUBPATTERN:
                _group, add, remove, sub = av
                self._emit(code, sub, (flags | add) & ~remove)
            elif op is C.BRANCH:
                self._branch(code, av[1], flags)
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
                self._repeat(code, av, flags, greedy=op is C.MAX_REPEAT)
            elif op in (C.ASSERT, C.ASSERT_NOT):
                direction, sub = av
                width = sub.getwidth()
                if direction < 0 and width[0] != width[1]:
                    raise Unsupported("variable-width look-behind")
                code.append((LOOK, direction < 0, op is C.ASSERT_NOT, self.program(sub, flags), width[0]))
            elif op is getattr(C, "ATOMIC_GROUP", None):
                code.append((ATOMIC, self.program(av, flags)))
            elif op is getattr(C, "POSSESSIVE_REPEAT", None):
                code.append((ATOMIC, self.program([(C.MAX_REPEAT, av)], flags)))
            else:
                raise Unsupported(f"{op}")

    def _branch(self, code: list[tuple[Any, ...]], alternatives: list[Any], flags: int) -> None:
        jumps = []
        for i, alt in enumerate(alternatives):
            split = len(code)
            if i < len(alternatives) - 1:
                code.append((SPLIT, split + 1, None))
            self._emit(code, alt, flags)
            if i < len(alternatives) - 1:
                jumps.append(len(code))
                code.append((JMP, None))
                code[split] = (SPLIT, split + 1, len(code))
        for j in jumps:
            code[j] = (JMP, len(code))

    def _repeat(self, code: list[tuple[Any, ...]], av: Any, flags: int, greedy: bool) -> None:
        lo, hi, sub = av
        if len(sub) == 1 and (test := self.char_test(sub[0][0], sub[0][1], flags)) is not None:
            code.append((RUN, test, lo, hi, greedy))
            return
        if lo > MAX_UNROLL or (hi != MAXREPEAT and hi > MAX_UNROLL):
            raise Unsupported(f"a repeat of {lo} to {hi} groups")
        for _ in range(lo):
            self._emit(code, sub, flags)
        if hi == MAXREPEAT:  # L: SPLIT body, out; body; (progress check); JMP L
            register = self.registers
            self.registers += 1
            loop = len(code)
            code.append((SPLIT, None, None))
            code.append((MARK, register))
            self._emit(code, sub, flags)
            code.append((PROGRESS, register, loop, None))
            out = len(code)
            code[loop] = (SPLIT, loop + 1, out) if greedy else (SPLIT, out, loop + 1)
            code[out - 1] = (PROGRESS, register, loop, out)
            return
        splits = []
        for _ in range(hi - lo):  # nested optional copies: (?:x(?:x(?:x)?)?)?
            splits.append(len(code))
            code.append((SPLIT, None, None))
            self._emit(code, sub, flags)
        out = len(code)
        for s in splits:
            code[s] = (SPLIT, s + 1, out) if greedy else (SPLIT, out, s + 1)


def _first(nodes: Any, compiler: Compiler, flags: int) -> CharTest | None:
    """What a match's first character must be, when the pattern's start says so."""
    if not nodes:
        return None
    op, av = nodes[0]
    test = compiler.char_test(op, av, flags)
    if test is not None:
        return test
    if op is C.SUBPATTERN:
        return _first(av[3], compiler, (flags | av[1]) & ~av[2])
    if op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] >= 1:
        return _first(av[2], compiler, flags)
    if op is C.BRANCH:
        tests = [_first(alt, compiler, flags) for alt in av[1]]
        if all(tests):
            return CharTest(lambda ch: any(t(ch) for t in tests if t), False)
    return None


def compile_program(pattern: re.Pattern[str]) -> Program:
    parsed = _parser.parse(pattern.pattern, pattern.flags)
    flags = parsed.state.flags
    compiler = Compiler()
    code = compiler.program(parsed, flags)
    multiline = bool(flags & re.MULTILINE)
    first_op = next(iter(parsed), None)
    anchored = first_op is not None and (
        first_op == (C.AT, C.AT_BEGINNING_STRING) or (first_op == (C.AT, C.AT_BEGINNING) and not multiline)
    )
    first = None if parsed.getwidth()[0] == 0 else _first(parsed, compiler, flags)
    return Program(code, anchored, first)


def _at(kind: Any, multiline: bool, s: str, pos: int) -> bool:
    n = len(s)
    if kind is C.AT_BEGINNING:
        return pos == 0 or (multiline and s[pos - 1] == "\n")
    if kind is C.AT_BEGINNING_STRING:
        return pos == 0
    if kind is C.AT_END:
        return pos == n or (s[pos] == "\n" and (multiline or pos == n - 1))
    if kind is C.AT_END_STRING:
        return pos == n
    if kind in (C.AT_BOUNDARY, C.AT_NON_BOUNDARY):
        edge = (pos > 0 and _is_word(s[pos - 1])) != (pos < n and _is_word(s[pos]))
        return edge == (kind is C.AT_BOUNDARY)
    raise Unsupported(f"{kind}")


class Machine:
    """Runs programs on one string and counts steps, up to ``budget``."""

    def __init__(self, s: str, budget: int, registers: int) -> None:
        self.s, self.budget, self.steps = s, budget, 0
        self.registers = (-1,) * registers

    def run(self, code: list[tuple[Any, ...]], pos: int) -> int:
        """The end of the first match of ``code`` at ``pos``, or -1."""
        s, n = self.s, len(self.s)
        steps, budget = self.steps, self.budget
        stack: list[tuple[int, int, int, tuple[int, ...], int]] = []
        pc, regs = 0, self.registers
        while True:
            while True:  # run forward until the program fails or matches
                steps += 1
                op = code[pc]
                kind = op[0]
                if kind == CHAR:
                    if pos < n and op[1](s[pos]):
                        pos += 1
                        pc += 1
                        continue
                    break
                if kind == RUN:
                    _, test, lo, hi, greedy = op
                    limit = n if hi == MAXREPEAT else min(n, pos + hi)
                    end = pos
                    want = limit if greedy else min(limit, pos + lo)
                    while end < want and test(s[end]):
                        end += 1
                    steps += end - pos
                    if end - pos < lo:
                        break
                    if greedy and end - pos > lo:
                        stack.append((_GIVE_BACK, pc, pos, regs, end - pos - 1))
                    elif not greedy:
                        stack.append((_TAKE_MORE, pc, pos, regs, lo + 1))
                    pos = end
                    pc += 1
                    continue
                if kind == SPLIT:
                    stack.append((_RESUME, op[2], pos, regs, 0))
                    pc = op[1]
                    continue
                if kind == JMP:
                    pc = op[1]
                    continue
                if kind == AT:
                    if _at(op[1], op[2], s, pos):
                        pc += 1
                        continue
                    break
                if kind == LOOK:
                    _, behind, negate, sub, width = op
                    self.steps = steps
                    start = pos - width if behind else pos
                    found = start >= 0 and self.run(sub, start) >= 0
                    steps = self.steps
                    if found != negate:
                        pc += 1
                        continue
                    break
                if kind == ATOMIC:
                    self.steps = steps
                    end = self.run(op[1], pos)
                    steps = self.steps
                    if end < 0:
                        break
                    pos = end
                    pc += 1
                    continue
                if kind == MARK:
                    r = op[1]
                    regs = (*regs[:r], pos, *regs[r + 1 :])
                    pc += 1
                    continue
                if kind == PROGRESS:  # a loop body that matched empty ends the loop
                    pc = op[3] if pos == regs[op[1]] else op[2]
                    continue
                self.steps = steps  # MATCH
                return pos
            if steps > budget:
                self.steps = steps
                raise OverBudget(steps)
            while True:  # backtrack: the latest alternative left
                if not stack:
                    self.steps = steps
                    return -1
                what, at, start, regs, count = stack.pop()
                steps += 1
                if what == _RESUME:
                    pc, pos = at, start
                    break
                _, test, lo, hi, _greedy = code[at]
                if what == _GIVE_BACK:
                    if count > lo:
                        stack.append((_GIVE_BACK, at, start, regs, count - 1))
                    pc, pos = at + 1, start + count
                    break
                end = start + count  # _TAKE_MORE: a lazy repeat takes one more character
                if (hi == MAXREPEAT or count <= hi) and end <= n and test(s[end - 1]):
                    stack.append((_TAKE_MORE, at, start, regs, count + 1))
                    pc, pos = at + 1, end
                    break


def search_steps(pattern: re.Pattern[str], s: str, budget: int) -> tuple[bool, int]:
    """(whether ``pattern.search(s)`` matches, the steps the search took); OverBudget past ``budget``."""
    program = compile_program(pattern)
    return search_program(program, s, budget, registers(program))


def registers(program: Program) -> int:
    return 1 + max((op[1] for op in _all_ops(program.code) if op[0] == MARK), default=0)


def _all_ops(code: list[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    for op in code:
        yield op
        if op[0] == LOOK:
            yield from _all_ops(op[3])
        elif op[0] == ATOMIC:
            yield from _all_ops(op[1])


def search_program(program: Program, s: str, budget: int, registers: int) -> tuple[bool, int]:
    machine = Machine(s, budget, registers)
    first = program.first
    for start in [0] if program.anchored else range(len(s) + 1):
        machine.steps += 1
        if first is not None and (start == len(s) or not first(s[start])):
            continue
        if machine.run(program.code, start) >= 0:
            return True, machine.steps
        if machine.steps > budget:
            raise OverBudget(machine.steps)
    return False, machine.steps


# --- adversarial lines -------------------------------------------------------------------------


def _sample(nodes: Any, flags: int, compiler: Compiler) -> str:
    """A short string the nodes match (first alternatives, fewest repeats but at least one)."""
    out = []
    for op, av in nodes:
        test = compiler.char_test(op, av, flags)
        if test is not None:
            out.append(test.sample() or "")
        elif op is C.SUBPATTERN:
            out.append(_sample(av[3], (flags | av[1]) & ~av[2], compiler))
        elif op is C.BRANCH:
            out.append(_sample(av[1][0], flags, compiler))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT) or op is getattr(C, "POSSESSIVE_REPEAT", None):
            out.append(_sample(av[2], flags, compiler) * max(1, min(av[0], 8)))
        elif op is getattr(C, "ATOMIC_GROUP", None):
            out.append(_sample(av, flags, compiler))
    return "".join(out)


def fragments(pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    """(head, repeated piece) pairs whose lines (head + piece * k + tail) make backtracking slow:
    every literal run, every prefix of a match, every alternative, and each repeat's character,
    alone and after the prefix that leads to it."""
    parsed = _parser.parse(pattern.pattern, pattern.flags)
    flags = parsed.state.flags
    compiler = Compiler()
    out: dict[tuple[str, str], None] = {}

    def add(head: str, piece: str) -> None:
        if piece:
            out.setdefault((head, piece), None)

    def sequence(nodes: Any, flags: int, head: str) -> None:
        nodes = list(nodes)
        literal = ""
        for i, (op, av) in enumerate(nodes):
            prefix = head + _sample(nodes[:i], flags, compiler)
            if op is C.LITERAL:
                literal += chr(av)
                continue
            add("", literal)
            add("", prefix)  # a matching prefix, repeated: up to this node and through it
            add("", prefix + _sample([(op, av)], flags, compiler))
            literal = ""
            test = compiler.char_test(op, av, flags)
            if op is C.SUBPATTERN:
                sequence(av[3], (flags | av[1]) & ~av[2], prefix)
            elif op is C.BRANCH:
                for alt in av[1]:
                    sequence(alt, flags, prefix)
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT) or op is getattr(C, "POSSESSIVE_REPEAT", None):
                sub = list(av[2])
                one = compiler.char_test(sub[0][0], sub[0][1], flags) if len(sub) == 1 else None
                for ch in _class_chars(one) if one else [_sample(sub, flags, compiler)]:
                    add("", ch)
                    add(prefix, ch)  # the prefix once, then the repeat's character
                if one is None:
                    sequence(sub, flags, prefix)
            elif op in (C.ASSERT, C.ASSERT_NOT):
                sequence(av[1], flags, prefix)
            elif op is getattr(C, "ATOMIC_GROUP", None):
                sequence(av, flags, prefix)
            elif test is not None:
                for ch in _class_chars(test):
                    add("", ch)
        add("", literal)
        add("", head + _sample(nodes, flags, compiler))

    sequence(parsed, flags, "")
    return list(out)


def _class_chars(test: CharTest) -> list[str]:
    """Characters of a class worth repeating: a letter, a digit, a space, punctuation it takes."""
    picks = [ch for ch in 'a1 .["' if test(ch)]
    return picks or ([s] if (s := test.sample()) else [])


#: the character that ends a line (it rarely completes a match)
TAIL = "\x01"


def line(head: str, piece: str, length: int) -> str:
    """``head``, ``piece`` repeated to about ``length`` characters, and :data:`TAIL`."""
    return head + piece * max(1, (length - len(head)) // len(piece)) + TAIL


def doctor_regexes(signatures: list[Any]) -> list[tuple[str, re.Pattern[str]]]:
    """(where, pattern) of every regex ``doctor`` applies to a log line, once each: the signatures'
    patterns (with the frame patterns of their functions), confirming and vetoing lines, and every
    compiled pattern of the doctor modules (the warning and process markers, the version finder).
    Imported here, not at the top, so that the benchmark's child process imports the doctor of the
    tree it measures."""
    import importlib

    from patchctl.doctor import compare, logfile, matcher, scan, versions
    from patchctl.doctor import signatures as table

    # the run directory's modules (issue 37), where the measured tree has them (an older one's
    # benchmark column does not)
    extra = []
    for name in ("stacks", "flight", "rundir", "nodes"):
        try:
            extra.append(importlib.import_module(f"patchctl.doctor.{name}"))
        except ImportError:
            continue

    out: dict[tuple[str, int], tuple[str, re.Pattern[str]]] = {}
    for s in signatures:
        for kind in ("patterns", "confirm", "unless"):
            for p in getattr(s, kind):
                out.setdefault((p.pattern, p.flags), (f"{s.id}.{kind}", p))
    for module in (scan, versions, matcher, logfile, table, compare, *extra):
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                out.setdefault((value.pattern, value.flags), (f"{module.__name__.rsplit('.', 1)[1]}.{name}", value))
    return list(out.values())
