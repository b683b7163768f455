"""Whether a file still loads as its type after a patch's change: never silently broken (issue 38).

A patch can apply cleanly and leave a file its program refuses: a hunk placed in the middle of
a YAML section, a key added beside upstream's own copy of it (OmegaConf refuses duplicate keys),
a Python change that no longer compiles. :func:`check` is asked with a file's text before and
after one patch's change, before anything is written (the apply planner and ``verify`` ask it),
and says what is wrong, by file type:

- Python (``.py``): compiles; and a definition the change adds to a class or module body that
  the same body defines again (Python keeps the later one, so one of them never runs);
- YAML (``.yaml``/``.yml``): loads with PyYAML's safe loader, duplicate keys refused as
  OmegaConf's loader refuses them; and no upstream line after the change moves under another
  key (:func:`~patchctl.patchsets.kinds.keypath.moved`);
- TOML (``.toml``), JSON (``.json``): parse;
- requirements (``*requirements*.txt``/``.in``): each line is a requirement pip reads, or one of
  pip's option lines (``-r``, ``--index-url``), a URL or a path.

A file that did not load before the change either is not the change's doing (upstream ships it
so): the problem comes back with ``already`` set, and the planner applies the patch with a note.
Only the texts' own loaders run: nothing in the file is executed (PyYAML's *safe* loader builds
plain values; ``compile`` does not run the code).

PyYAML is imported only when a YAML file is checked. It is a dependency of patchctl (verl needs
it too); if it is missing all the same, :class:`YamlUnavailable` stops the command rather than
leave YAML files unchecked.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import sys
import warnings
from collections.abc import Callable
from typing import Any

from patchctl.errors import PatchctlError
from patchctl.patchsets.placement.pyparse import split_lines
from patchctl.records import record, replace
from patchctl.sha import sha256

# Each loader imports what it needs when it first runs (tomllib, packaging.requirements, PyYAML,
# the YAML key reader): apply touches a handful of file types, and every import counts at start-up.

_REQUIREMENTS = re.compile(r"(^|/)[^/]*requirements[^/]*\.(txt|in)$")
_TOML_LINE = re.compile(r"at line (\d+)")
#: a line that defines a name in a body: its indentation and the name
_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)


@record(frozen=True)
class Problem:
    """Why a file does not load, or would not mean what the fork meant, after a change."""

    #: the file, relative to the tree
    path: str
    #: 1-based line the problem is at, when known
    line: int | None
    #: one line, in the loader's or our words
    why: str
    #: the type the file does not load as; None for a problem of the change's place
    what: str | None = None
    #: the file did not load before the change either: upstream ships it so
    already: bool = False

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path

    def __str__(self) -> str:
        return f"{self.where}: does not {_verb(self.what)}: {self.why}" if self.what else f"{self.where}: {self.why}"

    def after(self) -> str:
        """The problem as a change would cause it: the line is the changed text's."""
        return f"{self.where}: would not {_verb(self.what)} after the change: {self.why}" if self.what else str(self)


def _verb(what: str | None) -> str:
    return "compile" if what == "Python" else f"load as {what}"


class YamlUnavailable(PatchctlError):
    """PyYAML, a dependency of patchctl, cannot be imported; YAML files must not go unchecked."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path}: cannot check that it still loads as YAML: PyYAML is not installed in this Python "
            "(a dependency of patchctl); install it (pip install pyyaml)"
        )


def type_of(path: str) -> str | None:
    """The type a file must load as, by its name; None for files no loader checks."""
    low = path.lower()
    if low.endswith(".py"):
        return "Python"
    if _REQUIREMENTS.search(low):
        return "requirements"
    suffix = low.rsplit(".", 1)[-1]
    return {"yaml": "YAML", "yml": "YAML", "toml": "TOML", "json": "JSON"}.get(suffix) if "." in low else None


def check(path: str, new: str | None, old: str | None) -> Problem | None:
    """What is wrong with ``path`` once its text ``old`` becomes ``new`` (None: deleted); None when
    it loads as its type, or no loader knows its type.

    A file the change creates (``old`` None) is not checked: it is bytes shipped whole, the
    patchset's (add-file) or upstream's moved (rename-file), which no placement can break and
    which load wherever the fork's copy did; capture proves the patchset gives the fork's file.
    The text before is loaded only when the text after does not load (to tell the change's
    doing from upstream's), and compared only for the checks of a change's place.
    """
    what = type_of(path)
    if what is None or new is None or old is None:
        return None
    problem = loads(path, new)
    if problem is not None:
        return replace(problem, already=True) if loads(path, old) is not None else problem
    if what == "YAML":
        return _moved(path, old, new)
    return _shadowed(path, old, new) if what == "Python" else None


def loads(path: str, text: str) -> Problem | None:
    """Whether ``text`` loads as the type ``path`` names (None: it does, or no loader knows it).

    A text this Python has seen load before is not loaded again (:func:`_seen`): every verify
    compiled each patched Python file anew, a tenth of its run on uky (issue 39.13)."""
    what = type_of(path)
    if what is None:
        return None
    key = _key(what, text)
    if key is not None and _seen(key):
        return None
    line, why = _LOADERS[what](_unmarked(text), path)
    if why is None:
        if key is not None:
            _remember(key)
        return None
    return Problem(path, line, why, what)


# -- texts seen to load: a cache of names, never read ------------------------------------------

#: texts shorter than this are loaded every time: their loader costs less than the cache's file
SEEN_MIN = 4096
#: bumped when a loader's verdict changes (a check added): older names are then never looked up
SEEN_FORMAT = "1"


def seen_dir() -> str:
    """``$PATCHCTL_CACHE/loads``: one empty file per text that loaded, named by a hash of the
    text, its type, this format and the exact Python (whose compiler decides what compiles)."""
    from patchctl.bytecode import cache_root

    return os.path.join(cache_root(os.environ), "loads")


def _key(what: str, text: str) -> str | None:
    if len(text) < SEEN_MIN:
        return None
    h = sha256(f"{SEEN_FORMAT}\0{what}\0{sys.version}\0".encode())
    h.update(text.encode("utf-8", "surrogatepass"))  # any str: a lone surrogate is the loader's to refuse
    return h.hexdigest()


def _seen(key: str) -> bool:
    """Whether the text of ``key`` loaded before. Only a name's existence is asked, nothing in
    the cache is read, so a planted file can at most skip a check; the cache is the user's own
    (as the release archives beside it), written by no one else."""
    return os.path.isfile(os.path.join(seen_dir(), key))


def _remember(key: str) -> None:
    """Note that the text of ``key`` loads; a cache that cannot be written is left as it is (the
    check ran, and the next run runs it again)."""
    folder = seen_dir()
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        os.close(os.open(os.path.join(folder, key), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
    except OSError:
        pass


def _unmarked(text: str) -> str:
    return text[1:] if text.startswith("\ufeff") else text


# -- the loaders: (line, why) with why None when the text loads ----------------------------


def _python(text: str, path: str) -> tuple[int | None, str | None]:
    try:
        with warnings.catch_warnings():  # invalid escapes and the like warn on stderr, and are no error
            warnings.simplefilter("ignore")
            # bytes, so a coding cookie is honoured as Python honours it; compiled, not run
            compile(text.encode("utf-8", "surrogateescape"), path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno, exc.msg
    except ValueError as exc:  # null bytes, on Pythons that say so this way
        return None, str(exc)
    except (RecursionError, MemoryError):  # what hostile nesting makes of the compiler
        return None, "nested too deeply to compile"
    return None, None


def _toml(text: str, path: str) -> tuple[int | None, str | None]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = _TOML_LINE.search(str(exc))
        return (int(m.group(1)) if m else None), str(exc).splitlines()[0]
    except RecursionError:
        return None, "nested too deeply"
    return None, None


def _json(text: str, path: str) -> tuple[int | None, str | None]:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.lineno, exc.msg
    except RecursionError:
        return None, "nested too deeply"
    return None, None


def _requirements(text: str, path: str) -> tuple[int | None, str | None]:
    """Each line pip would read as a requirement parses as one (PEP 508); pip's own lines pass:
    options (``-r``, ``-e``, ``--index-url``), direct URLs and local paths, which pip reads
    without a name."""
    from packaging.requirements import InvalidRequirement, Requirement

    logical, first = "", 0
    for n, raw in enumerate(split_lines(text), 1):
        line = re.sub(r"(^|\s)#.*", "", raw.rstrip("\r\n"))
        if not logical:
            first = n
        if line.endswith("\\"):
            logical += line[:-1].rstrip() + " "
            continue
        logical, req = "", (logical + line).strip()
        req = re.split(r"\s+--?[A-Za-z]", req, maxsplit=1)[0].strip()  # per-line options: --hash=...
        if not req or req.startswith("-") or "://" in req or req.startswith((".", "/", "~", "file:", "${")):
            continue
        try:
            Requirement(req)
        except InvalidRequirement as exc:
            return first, f"{req!r} is no requirement ({str(exc).splitlines()[0]})"
    return None, None


def _yaml(text: str, path: str) -> tuple[int | None, str | None]:
    try:
        yaml: Any = importlib.import_module("yaml")
    except ImportError:
        raise YamlUnavailable(path) from None
    try:
        for _ in yaml.load_all(text, Loader=_strict_loader(yaml)):
            pass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        said = f"{exc.problem} ({exc.context})" if exc.context and exc.problem else exc.problem or exc.context
        return (mark.line + 1 if mark else None), str(said)
    except (yaml.YAMLError, RecursionError) as exc:
        return None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None, None


_LOADER: list[Any] = []


def _strict_loader(yaml: Any) -> Any:
    """PyYAML's safe loader (its C parser where built) that refuses a duplicate key as OmegaConf's
    loader does: among a mapping's plain string keys, before merge keys (``<<``) are applied.
    Made once; built with ``type`` since PyYAML ships no type hints to subclass under mypy."""
    if not _LOADER:
        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        def construct_mapping(self: Any, node: Any, deep: bool = False) -> Any:
            seen: dict[str, Any] = {}
            for key_node, _value in node.value if isinstance(node, yaml.MappingNode) else ():
                if key_node.tag != yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG:
                    continue
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {key_node.value!r} (first at line {seen[key_node.value].line + 1}), "
                        "which OmegaConf refuses",
                        key_node.start_mark,
                    )
                seen[key_node.value] = key_node.start_mark
            return base.construct_mapping(self, node, deep=deep)

        _LOADER.append(type("StrictLoader", (base,), {"construct_mapping": construct_mapping}))
    return _LOADER[0]


_LOADERS: dict[str, Callable[[str, str], tuple[int | None, str | None]]] = {
    "Python": _python,
    "YAML": _yaml,
    "TOML": _toml,
    "JSON": _json,
    "requirements": _requirements,
}


# -- the checks of a change's place ------------------------------------------------------------


def _moved(path: str, old: str, new: str) -> Problem | None:
    from patchctl.patchsets.kinds import keypath

    found = keypath.moved(split_lines(_unmarked(old)), split_lines(_unmarked(new)))
    if found is None:
        return None
    at, was, now = found
    key = split_lines(_unmarked(new))[at].strip()
    return Problem(
        path,
        at + 1,
        f"upstream's {key[:60]!r} would move from {keypath.under(was)} to {keypath.under(now)}: the change "
        "lands inside a section it does not belong to",
    )


def _defined(text: str) -> dict[tuple[str, str], int]:
    """How often each (indentation, name) is defined, read from the text alone: a cheap first look."""
    out: dict[tuple[str, str], int] = {}
    for m in _DEF.finditer(text):
        out[m.group(1), m.group(2)] = out.get((m.group(1), m.group(2)), 0) + 1
    return out


def _written(old: str, new: str) -> str:
    """The lines of ``new`` the change wrote: between the lines the two texts share at the top and
    the bottom."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return "".join(b[head : len(b) - tail])


def _shadowed(path: str, old: str, new: str) -> Problem | None:
    """A name the change defines twice in one class or module body: Python keeps the later one,
    so the other never runs (a method the fork added, where upstream now defines it further down).

    A body where every definition of the name is the change's own is the fork's file as it is:
    the change copies the fork's lines, and the fork defines the name twice there too (Skywork-OR1's
    ray_trainer.py defines ``dataprotoitem_to_dataproto`` twice). Refusing it would refuse the
    fork itself; what is refused is a duplicate the placement makes, beside a definition that was
    there before the change.
    """
    written = _defined(_written(old, new))
    if not written:
        return None  # the common case (a change that defines nothing): no parse
    before, after = _defined(old), _defined(new)
    if not any(after.get(k, 0) > 1 and after.get(k, 0) > before.get(k, 0) for k in written):
        return None  # no name it defines is defined twice now: no parse
    try:
        counts_old = _every(ast.parse(_unmarked(old).encode("utf-8", "surrogateescape")))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # nothing to compare with: the change made the file compile
    for (scope, name), lines in _every(ast.parse(_unmarked(new).encode("utf-8", "surrogateescape"))).items():
        had = len(counts_old.get((scope, name), []))
        if len(lines) > 1 and len(lines) > had and had > 0:
            where = f"class {scope}" if scope else "the module"
            return Problem(
                path,
                lines[0],
                f"{where} would define {name} {'twice' if len(lines) == 2 else f'{len(lines)} times'} "
                f"(lines {', '.join(map(str, lines))}); Python keeps the "
                f"last, so the one at line {lines[0]} would never run",
            )
    return None


def _every(tree: ast.Module) -> dict[tuple[str, str], list[int]]:
    """Every name defined in each class or module body: (class path, name) -> lines.
    Redefinitions that are meant are left out: ``@x.setter``, ``@overload``, ``@f.register``."""
    out: dict[tuple[str, str], list[int]] = {}

    def visit(body: list[ast.stmt], scope: str) -> None:
        for s in body:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if not _meant(s):
                    out.setdefault((scope, s.name), []).append(s.lineno)
                if isinstance(s, ast.ClassDef):
                    visit(s.body, f"{scope}.{s.name}" if scope else s.name)

    visit(tree.body, "")
    return out


def _meant(s: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
    """A definition decorated to stand beside another of its name (a property's setter, an overload)."""
    for d in s.decorator_list:
        said = ast.unparse(d.func if isinstance(d, ast.Call) else d)
        if said.split(".")[0] == s.name or said.endswith(("overload", ".register")):
            return True
    return False
