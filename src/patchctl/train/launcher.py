"""Building and running the trainer's command: ``python -m verl.trainer.main_ppo`` in the tree.

The command is an argv list (no shell), run with the target tree as working directory and first
on ``PYTHONPATH``, so the driver and every Ray worker import the patched verl. Its output is
streamed: each line goes to the log file as it arrives and to a callback with the seconds since
launch, which feeds the live progress line and the timing breakdown. ``proc.run`` captures
output only at exit, which is why this module reads the pipe itself.
"""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from patchctl import bytecode, fsutil, proc
from patchctl.train import hangdump
from patchctl.train.overrides import parse as parse_override
from patchctl.train.profiles import Profile, expand_env, fill

ENTRY = ("-m", "verl.trainer.main_ppo")


@dataclass(frozen=True)
class Launch:
    """Everything about one trainer process, decided before it starts (what --dry-run shows)."""

    argv: tuple[str, ...]
    cwd: Path
    #: the variables patchctl sets on top of the calling environment
    env: dict[str, str]
    log: Path


@dataclass(frozen=True)
class Finished:
    #: None when patchctl stopped the process (timeout or Ctrl-C)
    returncode: int | None
    #: seconds since launch when the process ended
    ended_at: float
    timed_out: bool = False


def has_ray_kwargs(root: Path) -> bool:
    """verl >= 0.6 nests ray_init under ray_kwargs; 0.5 has ray_init at the top."""
    cfg = root / "verl" / "trainer" / "config" / "ppo_trainer.yaml"
    try:
        return re.search(r"^ray_kwargs:", cfg.read_text(encoding="utf-8"), re.M) is not None
    except OSError:
        return True


def override_key(override: str) -> str:
    """``trainer.total_epochs`` of ``trainer.total_epochs=2`` (also of ``+key=`` and ``~key``)."""
    return override.split("=", 1)[0].lstrip("+~")


def adapt_override(override: str, ray_kwargs: bool) -> str:
    if not ray_kwargs and override.startswith("ray_kwargs.ray_init."):
        return override[len("ray_kwargs.") :]
    if ray_kwargs and override.startswith("ray_init."):
        return "ray_kwargs." + override
    return override


def build(
    root: Path,
    profile: Profile,
    values: dict[str, str],
    overrides: list[str] | tuple[str, ...],
    python: str,
    log: Path,
    extra_env: dict[str, str] | None = None,
    environ: dict[str, str] | None = None,
    hook: Path | None = None,
) -> Launch:
    """The argv and environment of the run: profile overrides, then the user's, which win.

    ``hook`` (patchctl's code hook folder) comes right after the tree on ``PYTHONPATH``: its
    ``sitecustomize`` is the first on ``sys.path`` unless the tree has one of its own.
    """
    environ = dict(os.environ if environ is None else environ)
    ray_kwargs = has_ray_kwargs(root)
    # as hydra would parse them, so a typo fails here rather than after Ray and the workers are up
    mine = [adapt_override(parse_override(o).text, ray_kwargs) for o in overrides]
    # hydra refuses a key given twice: a user override replaces the profile's for that key
    taken = {override_key(o) for o in mine}
    args = [
        a
        for a in (
            adapt_override(fill(o, values, f"profile {profile.name}, override {o!r}"), ray_kwargs)
            for o in profile.overrides
        )
        if override_key(a) not in taken
    ] + mine
    env = {
        k: expand_env(fill(v, values, f"profile {profile.name}, env {k}"), environ)
        for k, v in {**profile.env, **(extra_env or {})}.items()
    }
    # the trainer and its Ray workers import verl from the tree: their bytecode goes to the cache
    env.update({k: v for k, v in bytecode.outside_tree({**environ, **env}).items() if k not in env})
    inherited = env.get("PYTHONPATH", environ.get("PYTHONPATH", ""))
    env["PYTHONPATH"] = os.pathsep.join(
        [str(root), *([str(hook)] if hook else []), *[p for p in inherited.split(os.pathsep) if p]]
    )
    return Launch((python, *ENTRY, *args), root, env, log)


def execute(
    launch: Launch,
    t0: float,
    on_line: Callable[[str, float], None],
    timeout: float | None = None,
    while_starting: Callable[[], None] | None = None,
    on_hang: Callable[[], None] | None = None,
) -> Finished:
    """Run the trainer, streaming its merged output into the log and ``on_line``.

    ``t0`` is the ``time.monotonic()`` of the launch, so every time is "seconds since the user
    started patchctl". The process gets its own session; on timeout or Ctrl-C that whole group
    (the driver and the Ray processes it started) is terminated. After a ``kill -9`` of patchctl
    the driver gets SIGKILL from the kernel and the rest of its group is ended by the next
    train, migrate, validate or matrix (see :mod:`patchctl.proc` and :mod:`patchctl.orphans`).
    ``while_starting`` runs once the process is launched (work the trainer needs only later, such
    as the smoke assets); if it raises, the trainer is stopped and the error propagates.
    ``on_hang`` runs at the timeout, before the dumps and the kill: while the ranks still wait
    (validate takes the other hosts' dumps then).

    The trainer runs with PyTorch's NCCL flight recorder on, dumping into the run directory (the
    caller's own ``TORCH_NCCL_*`` values win); on timeout, before the kill, :func:`hangdump.capture`
    takes each process's stacks and asks every rank for its flight recorder dump, for ``doctor``.
    """
    run_dir = launch.log.parent
    run_dir.mkdir(parents=True, exist_ok=True)
    fsutil.renew_folder(run_dir / hangdump.FLIGHT)  # this run's dumps only
    child = proc.spawn(
        launch.argv,
        cwd=launch.cwd,
        env={**hangdump.flight_env(run_dir), **os.environ, **launch.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        new_session=True,
        why="it runs the trainer; pass --python PATH",
    )
    assert child.stdout is not None
    # text as Popen(text=True) reads it: the locale's encoding, undecodable bytes replaced, and
    # universal newlines (a progress bar's \r ends a line too)
    stream = io.TextIOWrapper(child.stdout, encoding="locale", errors="replace")

    def pump() -> None:
        # a link planted at the log's name in the run directory is replaced, not written through
        with (
            fsutil.open_into(launch.log.parent, launch.log.name, stream=True) as raw,
            io.TextIOWrapper(raw, encoding="utf-8") as log,
        ):
            for line in stream:
                log.write(line)
                log.flush()
                on_line(line.rstrip("\n"), time.monotonic() - t0)

    reader = threading.Thread(target=pump, name="trainer-log", daemon=True)
    reader.start()
    timed_out = False
    try:
        if while_starting is not None:
            while_starting()
        try:
            code: int | None = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out, code = True, None
            # where each rank waits, while it still waits there
            if on_hang is not None:
                on_hang()
            hangdump.capture(run_dir, child.pid, python=launch.argv[0], env=launch.env)
            _terminate(child)
    except BaseException:
        _terminate(child)
        reader.join(timeout=5)
        raise
    ended = time.monotonic() - t0
    # Ray processes the driver left behind may still hold the pipe: give them a moment, then end them
    reader.join(timeout=3)
    if reader.is_alive():
        _terminate(child, group_only=True)
        reader.join(timeout=5)
    return Finished(code, ended, timed_out)


def _terminate(child: subprocess.Popen[bytes], group_only: bool = False) -> None:
    """SIGTERM the trainer's process group (its own session), SIGKILL what is left 10 s later."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        if group_only:
            time.sleep(1.0)
            continue
        try:
            child.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
