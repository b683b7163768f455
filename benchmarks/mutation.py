"""Mutation testing of the modules patchctl's promises rest on: does the suite fail when the code is wrong?

mutmut 3 runs the whole suite first to map tests to functions and mutates through trampolines
that the suite's real subprocesses (``python -m patchctl``, the remote agent shipped over ssh
as source) never import; on two shared cores that does not finish. This script makes the
realistic one-line bugs of issue 18's audit instead, each in a copy of ``src/`` that the tests
(and every process they start) import through ``PYTHONPATH``:

- a comparison flipped or moved across its boundary (``<`` / ``<=``, ``==`` / ``!=``, ``in`` / ``not in``);
- an integer off by one; ``True`` / ``False`` swapped;
- ``and`` / ``or`` swapped, a ``not`` dropped, an ``if``/``while`` condition negated;
- ``+`` / ``-`` swapped;
- a statement dropped (a call, an assignment, a ``raise``, a ``return``'s value).

Each module's ``fast`` tests run first; a mutant they miss is tried against ``slow`` tests (the
real-process sweeps). Mutants listed under ``equivalent`` in ``mutation.toml`` change no
behaviour (each with the reason) and are left out of the score. Usage::

    python benchmarks/mutation.py                 # every module of mutation.toml
    python benchmarks/mutation.py journal record  # some of them
    python benchmarks/mutation.py journal --list  # the mutants, without running anything
    python benchmarks/mutation.py --check         # equivalent keys that match no mutant (a line moved)

It prints one line per surviving mutant and a table: module, mutants, killed, equivalent,
survived, score = killed / (mutants - equivalent).
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
CONFIG = Path(__file__).with_suffix(".toml")
FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
DROPPABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Raise, ast.Return, ast.Delete)


@dataclass(frozen=True)
class Mutant:
    """One edit: the bytes ``start:end`` of the module become ``text``."""

    line: int
    col: int
    kind: str
    start: int
    end: int
    text: str

    @property
    def key(self) -> str:
        """Stable across runs as long as the line does not move: ``LINE:COLUMN:KIND``."""
        return f"{self.line}:{self.col}:{self.kind}"


class _Finder(ast.NodeVisitor):
    """Collects the mutants of one module, skipping docstrings, annotations and strings."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.starts = [0]
        for line in source.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        self.out: list[Mutant] = []
        #: inside a function: only there is a dropped statement a realistic bug (at module
        #: level it is an import-time NameError, caught by any test)
        self.depth = 0

    def _span(self, node: ast.AST) -> tuple[int, int]:
        return (self.starts[node.lineno - 1] + node.col_offset, self.starts[node.end_lineno - 1] + node.end_col_offset)

    def _add(self, node: ast.AST, kind: str, text: str) -> None:
        start, end = self._span(node)
        self.out.append(Mutant(node.lineno, node.col_offset, kind, start, end, text))

    def _segment(self, node: ast.AST) -> str:
        start, end = self._span(node)
        return self.source[start:end].decode()

    # -- what is never mutated -------------------------------------------------------------

    def visit_arg(self, node: ast.arg) -> None:  # annotations
        return

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:  # messages
        return

    def _body(self, body: list[ast.stmt]) -> None:
        for i, stmt in enumerate(body):
            docstring = i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            if docstring:
                continue
            if self.depth and isinstance(stmt, DROPPABLE) and not (isinstance(stmt, ast.Return) and stmt.value is None):
                self._add(stmt, "drop", "pass")
            self.visit(stmt)

    def _visit_with_body(self, node: ast.AST) -> None:
        for name, value in ast.iter_fields(node):
            if name in ("body", "orelse", "finalbody") and isinstance(value, list):
                self._body(value)
            elif name == "handlers":
                for h in value:
                    self._body(h.body)
            elif name in ("returns", "decorator_list", "type_params"):
                continue
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def visit_Module(self, node: ast.Module) -> None:
        self._body(node.body)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._body(node.body)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.visit(default)
        self.depth += 1
        self._body(node.body)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def _negate(self, test: ast.expr) -> None:
        """``not (test)``, unless another mutation already is its negation (a dropped ``not``,
        a flipped ``==``/``is``/``in``)."""
        negating = (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)) or (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn))
        )
        if not negating:
            self._add(test, "negate", f"not ({self._segment(test)})")

    def visit_If(self, node: ast.If) -> None:
        if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            self._negate(node.test)
            self.visit(node.test)
        self._visit_with_body(node)

    def visit_While(self, node: ast.While) -> None:
        self._negate(node.test)
        self.visit(node.test)
        self._visit_with_body(node)

    def visit_For(self, node: ast.For) -> None:
        self._visit_with_body(node)

    visit_With = visit_Try = visit_AsyncFor = visit_AsyncWith = visit_For

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        return

    visit_Import = visit_ImportFrom

    # -- the mutations -----------------------------------------------------------------------

    def visit_Compare(self, node: ast.Compare) -> None:
        for i, op in enumerate(node.ops):
            ops = list(node.ops)
            ops[i] = FLIP[type(op)]()
            flipped = ast.Compare(node.left, ops, node.comparators)
            self._add(node, f"cmp{i}", f"({ast.unparse(flipped)})")
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        self._add(node, "boolop", f"({ast.unparse(ast.BoolOp(other, node.values))})")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self._add(node, "not", f"({self._segment(node.operand)})")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        swap = {ast.Add: ast.Sub, ast.Sub: ast.Add}.get(type(node.op))
        if swap is not None and not _is_str(node.left) and not _is_str(node.right):
            self._add(node, "binop", f"({ast.unparse(ast.BinOp(node.left, swap(), node.right))})")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, bool):
            self._add(node, "bool", repr(not node.value))
        elif isinstance(node.value, int):
            self._add(node, "int", repr(node.value + 1))


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, (ast.JoinedStr,)) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def mutants(path: Path) -> list[Mutant]:
    source = path.read_bytes()
    finder = _Finder(source)
    finder.visit(ast.parse(source))
    out = []
    for m in finder.out:
        mutated = source[: m.start] + m.text.encode() + source[m.end :]
        try:
            ast.parse(mutated)
        except SyntaxError:
            continue
        out.append(m)
    return sorted(set(out), key=lambda m: (m.start, m.kind))


def describe(path: Path, m: Mutant) -> str:
    source = path.read_bytes()
    line = source.splitlines()[m.line - 1].decode().strip()
    return f"{m.key:<16} {line[:66]!s:<66} -> {m.text[:60]}"


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    fast: list[str]
    slow: list[str]
    equivalent: dict[str, str]
    timeout: float


def load(config: Path) -> list[Module]:
    doc = tomllib.loads(config.read_text())
    return [
        Module(
            name,
            ROOT / spec["path"],
            spec["fast"],
            spec.get("slow", []),
            spec.get("equivalent", {}),
            float(spec.get("timeout", 120)),
        )
        for name, spec in doc["module"].items()
    ]


def unmatched(mod: Module) -> list[str]:
    """The ``equivalent`` keys of ``mod`` that name no mutant any more. A key is its line, so an
    edit above a listed mutant moves it out from under its reason: the mutant then counts as a
    survivor, and the key may land on another mutant it does not describe."""
    found = {m.key for m in mutants(mod.path)}
    return sorted(set(mod.equivalent) - found, key=lambda key: [int(x) if x.isdigit() else x for x in key.split(":")])


def _pytest(scratch: Path, tests: list[str], timeout: float, show: bool = False) -> str:
    """``killed``, ``survived`` or ``timeout`` (a mutant that hangs the tests counts as caught);
    ``show`` prints the output of a failing run."""
    env = {**os.environ, "PYTHONPATH": f"{scratch / 'src'}:{ROOT}", "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header", *tests]
    # a background job of a shell starts with SIGINT ignored, and so would every patchctl the
    # tests start: their Ctrl-C tests need it back at its default. Its own session, so that a
    # mutant that hangs is stopped with every process its test started (a keeper that spins
    # on end-of-file would otherwise outlive the run and take a core from every mutant after)
    with subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()  # not its output: a process that left the group may hold the pipes open
            return "timeout"
    done = subprocess.CompletedProcess(argv, p.returncode, out, err)
    if show and done.returncode != 0:
        print(done.stdout.decode(errors="replace")[-3000:], done.stderr.decode(errors="replace")[-2000:])
    return "survived" if done.returncode == 0 else "killed"


def run_module(mod: Module, scratch: Path, keys: set[str] | None = None) -> tuple[int, int, list[tuple[Mutant, str]]]:
    """(mutants, killed, survivors with their state) for one module; ``keys`` limits the run to
    those mutants (the survivors of an earlier run, say)."""
    target = scratch / mod.path.relative_to(ROOT)
    pristine = mod.path.read_bytes()
    if any(
        _pytest(scratch, tests, mod.timeout * 4, show=True) != "survived" for tests in (mod.fast, mod.slow) if tests
    ):
        raise SystemExit(f"{mod.name}: its tests fail on the unmutated code; fix them first")
    found = [m for m in mutants(mod.path) if keys is None or m.key in keys]
    killed, survivors = 0, []
    for m in found:
        target.write_bytes(pristine[: m.start] + m.text.encode() + pristine[m.end :])
        try:
            state = _pytest(scratch, mod.fast, mod.timeout)
            if state == "survived" and mod.slow:
                state = _pytest(scratch, mod.slow, mod.timeout * 4)
        finally:
            target.write_bytes(pristine)
        if state == "survived":
            survivors.append((m, "equivalent" if m.key in mod.equivalent else "survived"))
            note = f"  ({mod.equivalent[m.key]})" if m.key in mod.equivalent else ""
            print(f"{survivors[-1][1].upper():<10} {mod.name:<16} {describe(mod.path, m)}{note}", flush=True)
        else:
            killed += 1
    return len(found), killed, survivors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", help="module names of mutation.toml (default: all)")
    ap.add_argument("--list", action="store_true", help="print the mutants and stop")
    ap.add_argument("--check", action="store_true", help="print equivalent keys matching no mutant; exit 1 if any")
    ap.add_argument("--config", type=Path, default=CONFIG)
    ap.add_argument("--keys", help="comma-separated LINE:COLUMN:KIND keys: run only those mutants")
    args = ap.parse_args(argv)
    modules = [m for m in load(args.config) if not args.modules or m.name in args.modules]
    if args.list:
        for mod in modules:
            for m in mutants(mod.path):
                print(f"{mod.name:<16} {describe(mod.path, m)}")
        return 0
    if args.check:
        found = [(mod, key) for mod in modules for key in unmatched(mod)]
        for mod, key in found:
            print(f"STALE      {mod.name:<16} {key:<16} {mod.equivalent[key]}")
        return 1 if found else 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="patchctl-mutation-") as tmp:
        scratch = Path(tmp)
        shutil.copytree(ROOT / "src", scratch / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        for mod in modules:
            t0 = time.monotonic()
            total, killed, survivors = run_module(mod, scratch, set(args.keys.split(",")) if args.keys else None)
            equivalent = sum(1 for _, s in survivors if s == "equivalent")
            stale = sorted(set(mod.equivalent) - {m.key for m, _ in survivors})
            if stale:
                print(f"NOTE       {mod.name}: listed as equivalent but killed or gone: {', '.join(stale)}")
            rows.append((mod.name, total, killed, equivalent, len(survivors) - equivalent, time.monotonic() - t0))
    print(f"\n{'module':<16} {'mutants':>7} {'killed':>6} {'equiv':>5} {'survived':>8} {'score':>6} {'time':>7}")
    for name, total, killed, equivalent, survived, took in rows:
        score = killed / (total - equivalent) if total > equivalent else 1.0
        print(f"{name:<16} {total:>7} {killed:>6} {equivalent:>5} {survived:>8} {score:>6.0%} {took:>6.0f}s")
    print("baseline (issue 18's hand audit, before these tests): 13 of 29 behaviour-changing bugs caught (45%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
