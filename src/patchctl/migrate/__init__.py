"""``patchctl migrate``: the patched tree onto every node of a cluster.

rsync over OpenSSH, in parallel, exactly the files git sees, incremental, each host verified
on arrival by a small stdlib-only agent (``remote_agent.py``) run with the host's python3.
"""

from __future__ import annotations

from patchctl.migrate.results import HostResult, HostStatus, MigrateResult, Phase, Progress
from patchctl.migrate.runner import Options, migrate

__all__ = ["HostResult", "HostStatus", "MigrateResult", "Options", "Phase", "Progress", "migrate"]
