"""When each step of one ``patchctl migrate`` starts and ends, per thread: what waits for what.

Runs patchctl in this process (``python benchmarks/bench_migrate_timeline.py migrate CLUSTER
--target TREE --config FILE --json``) and, on exit, prints one line per call of the steps below
(milliseconds since this script started, so Python's own start-up is before the first line) and
each module's import. The steps are wrapped as their modules are imported, so what the CLI
imports late is timed where it really loads. Used for the timelines of session 4 of issue 23 in
benchmarks/results/bench_migrate.md; a timeline of one run, not a benchmark: compare figures
only with bench_migrate.py's tables.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import atexit  # noqa: E402 - after T0: the start-up is part of the timeline
import functools  # noqa: E402
import importlib.abc  # noqa: E402
import importlib.machinery  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from types import ModuleType  # noqa: E402
from typing import Any  # noqa: E402

#: module -> the functions (``Class.method`` for methods) timed in it
STEPS = {
    "patchctl.clusters": ["load_cluster"],
    "patchctl.migrate.session": ["Session.__init__", "Session.look_at", "Session.run"],
    "patchctl.remote.ssh": ["Master.open", "Master.logged_in", "Master.close", "Connections.close"],
    "patchctl.cli.targets": ["open_target"],
    "patchctl.patchsets.loader": ["load_patchsets"],
    "patchctl.cli.migrate_run": ["_check_source"],
    "patchctl.migrate.runner": ["run"],
    "patchctl.migrate.prepare": ["prepare"],
    "patchctl.migrate.hashcache": ["load", "save"],
    "patchctl.migrate.fileset": ["walk", "hashed", "_hashed"],
    "patchctl.migrate.treewalk": ["walk_paths"],
    "patchctl.migrate.seal": ["of", "load", "save", "settled"],
    "patchctl.git": ["worktree_files", "changed", "toplevel", "head"],
    "patchctl.migrate.verify_remote": ["tags_request", "Agent.__init__", "Agent.sealed", "Agent.ask"],
    "patchctl.migrate.provenance": ["encode_manifest", "build"],
    "patchctl.migrate.hostrun": ["HostRun.run", "HostRun.sealed"],
    "patchctl.remote.lock": ["RootLock.__init__", "RootLock.wait"],
    "patchctl.migrate.hostsend": ["send"],
}
LOG: list[tuple[float, float, str, str]] = []


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            LOG.append((began - T0, time.perf_counter() - T0, threading.current_thread().name, name))

    return call


class Wrapping(importlib.abc.MetaPathFinder):
    """Finds STEPS' modules as the normal finder does, then times their import and wraps their steps."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname not in STEPS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            began = time.perf_counter()
            run(module)
            LOG.append((began - T0, time.perf_counter() - T0, "MainThread", f"import {fullname}"))
            for qualname in STEPS[fullname]:
                *outer, attr = qualname.split(".")
                owner: Any = module
                for part in outer:
                    owner = getattr(owner, part)
                setattr(owner, attr, timed(f"{fullname.rpartition('.')[2]}.{qualname}", getattr(owner, attr)))

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def show() -> None:
    out = sys.__stderr__
    assert out is not None
    print(f"{'start':>7} {'end':>7} {'ms':>6}  {'thread':12} step", file=out)
    for began, ended, thread, name in sorted(LOG):
        print(f"{began * 1e3:7.1f} {ended * 1e3:7.1f} {(ended - began) * 1e3:6.1f}  {thread[:12]:12} {name}", file=out)
    print(f"exit at {(time.perf_counter() - T0) * 1e3:.1f} ms", file=out)


if __name__ == "__main__":
    sys.meta_path.insert(0, Wrapping())
    atexit.register(show)
    sys.argv = ["patchctl", *sys.argv[1:]]
    from patchctl.cli.main import main

    main()
