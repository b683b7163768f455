"""``patchctl migrate``: the patched tree onto every node of a cluster.

rsync over OpenSSH, in parallel, exactly the files git sees, incremental, each host verified
on arrival by a small stdlib-only agent (``remote_agent.py``) run with the host's python3.

The names below load on first use (PEP 562), so that ``patchctl.migrate.session`` (and with it
``ssh``) can be imported — and the hosts' logins started with ``start`` — before the rest of
migrate and the patchset loader load.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from patchctl.migrate.options import Options
    from patchctl.migrate.results import HostResult, HostStatus, MigrateResult, Phase, Progress
    from patchctl.migrate.session import Session, migrate, start

_WHERE = {
    "HostResult": "results",
    "HostStatus": "results",
    "MigrateResult": "results",
    "Phase": "results",
    "Progress": "results",
    "Options": "options",
    "Session": "session",
    "start": "session",
    "migrate": "session",
}

__all__ = ["HostResult", "HostStatus", "MigrateResult", "Options", "Phase", "Progress", "Session", "migrate", "start"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"patchctl.migrate.{_WHERE[name]}"), name)
