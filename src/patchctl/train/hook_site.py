"""patchctl's code hook: copied as ``sitecustomize.py`` into a run's ``codehook/`` folder, which
the trainer's ``PYTHONPATH`` starts with, so every Python process of the run loads it at start-up
(the driver, Ray's workers, vLLM's engine core and GPU workers: they all inherit the environment).

It records, in ``$PATCHCTL_CODEHOOK_DIR/<pid>.jsonl``, each module of ``$PATCHCTL_CODEHOOK_WATCH``
(comma-separated: the patched modules, and ``verl`` itself) that the process executed, with the
file it came from (with that file's sha256) and the process's command line (which shows the
title vLLM and Ray set); twice later it samples the command line again, since titles are set
after the imports. patchctl judges the records after the run (``codehook.py``): this file decides
nothing, and a failure in it never breaks the process. Standard library only; nothing is
imported unless a watched module is (or, for the weight fingerprints, verl's weight sync).
A ``sitecustomize`` the environment had before (found further down ``sys.path``) still runs.
"""

import os
import sys

# imported for mypy alone (which takes any TYPE_CHECKING as true): no process of the run pays for them
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

_DIR = os.environ.get("PATCHCTL_CODEHOOK_DIR")
_WATCH = frozenset(filter(None, os.environ.get("PATCHCTL_CODEHOOK_WATCH", "").split(",")))
_SAMPLES = (8.0, 40.0)
#: verl's weight-sync modules: once one has run, ``patchctl_hook_weights`` (beside this file)
#: wraps its sender or engine class to fingerprint every parameter after each sync (weights-match)
_WEIGHTS = frozenset(
    (
        "verl.workers.rollout.vllm_rollout.bucketed_weight_transfer",
        "verl.workers.rollout.vllm_rollout.utils",
    )
)
#: verl's modules that ``patchctl_hook_repro`` (beside this file) seeds once they have run, where
#: ``PATCHCTL_REPRO_SEED`` is set (the smoke-vllm profile's reproducible rollout)
_REPRO = (
    frozenset(
        (
            "verl.trainer.ppo.v1.trainer_base",
            "verl.trainer.ppo.ray_trainer",
            "verl.experimental.agent_loop.single_turn_agent_loop",
        )
    )
    if os.environ.get("PATCHCTL_REPRO_SEED")
    else frozenset()
)
_state = {"sampling": False}


def _cmdline() -> str:
    try:
        with open("/proc/self/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:300]
    except OSError:
        return " ".join(sys.argv)[:300]


def _record(event: str, **fields: object) -> None:
    if _DIR is None:
        return
    try:
        import json
        import time

        line = json.dumps(
            {
                "event": event,
                "pid": os.getpid(),
                "ppid": os.getppid(),
                "t": round(time.time(), 3),
                "cmd": _cmdline(),
                **fields,
            }
        )
        with open(os.path.join(_DIR, f"{os.getpid()}.jsonl"), "a", encoding="utf-8") as f:
            f.write(line + "\n")
    except Exception:  # noqa: S110 - the hook never breaks the run
        pass


def _digest(file: "str | None") -> "str | None":
    """The sha256 of the source just executed: a reverted tree at the tree's own path shows here
    (validate compares it with migrate's record of that host's file)."""
    if not file or not file.endswith(".py"):
        return None
    try:
        import hashlib

        with open(file, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except Exception:
        return None


def _weights(name: str, module: "ModuleType") -> None:
    try:
        import patchctl_hook_weights  # type: ignore[import-not-found] # beside this file, in the run's codehook/

        patchctl_hook_weights.install(name, module, _record)
    except Exception:  # noqa: S110 - no fingerprints: weights-match then says it saw no sync
        pass


def _repro(name: str, module: "ModuleType") -> None:
    try:
        import patchctl_hook_repro  # type: ignore[import-not-found] # beside this file, in the run's codehook/

        if patchctl_hook_repro.install(name, module):
            _record("repro", module=name)
    except Exception as exc:  # the run goes on unseeded; the record says why
        _record("repro-failed", module=name, error=repr(exc)[:200])


def _sample_titles() -> None:
    if _state["sampling"]:
        return
    _state["sampling"] = True
    try:
        import threading

        for delay in _SAMPLES:
            timer = threading.Timer(delay, _record, ("title",))
            timer.daemon = True
            timer.start()
    except Exception:  # noqa: S110 - no title samples: the import record stands
        pass


def _main_module() -> "str | None":
    """The module run with ``-m`` (runpy executes it without a loader's exec_module)."""
    argv: list[str] = getattr(sys, "orig_argv", [])
    for i, arg in enumerate(argv[:-1]):
        if arg == "-m":
            return argv[i + 1]
    return None


class _Finder:
    """First on ``sys.meta_path``: for a watched name, the spec the other finders give, with an
    ``exec_module`` that records the module once it has run; every other name costs one set lookup."""

    def find_spec(
        self, name: str, path: "Sequence[str] | None" = None, target: "ModuleType | None" = None
    ) -> "ModuleSpec | None":
        if name not in _WATCH and name not in _WEIGHTS and name not in _REPRO:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None or isinstance(spec.loader, type):
            return spec
        if name == _main_module():
            _record("import", module=name, file=spec.origin, sha256=_digest(spec.origin), main=True)
            _sample_titles()
            return spec
        run = spec.loader.exec_module

        def exec_module(module: "ModuleType") -> None:
            run(module)
            if name in _WEIGHTS:
                _weights(name, module)
            if name in _REPRO:
                _repro(name, module)
            if name not in _WATCH:
                return
            file = getattr(module, "__file__", None) or spec.origin
            _record("import", module=name, file=file, sha256=_digest(file))
            _sample_titles()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign] # the wrap is the point: it records the run
        return spec


def _chain() -> None:
    """Run the ``sitecustomize`` this one hides (the next one on sys.path), as Python would have.

    Searched by hand rather than with importlib.util, whose import alone costs milliseconds in
    every process of the run.
    """
    try:
        here = os.path.dirname(os.path.realpath(__file__))
        for entry in sys.path:
            for name in ("sitecustomize.py", os.path.join("sitecustomize", "__init__.py")):
                file = os.path.join(entry or ".", name)
                if os.path.isfile(file) and os.path.dirname(os.path.realpath(file)) != here:
                    with open(file, "rb") as f:
                        code = compile(f.read(), file, "exec")
                    exec(code, {"__name__": "sitecustomize", "__file__": file, "__builtins__": __builtins__})  # noqa: S102 - runs the hidden sitecustomize, as site.py would
                    return
    except Exception:  # noqa: S110 - as site.py: a failing sitecustomize does not stop Python
        pass


if _DIR and _WATCH:
    sys.meta_path.insert(0, _Finder())
_chain()
