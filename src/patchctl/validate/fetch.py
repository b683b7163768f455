"""Step ``fetch``: the head's log, ``report.json`` and ``report.png`` into the local run directory.

One rsync over the head's master connection for all files (and the ``stacks/`` and
``nccl_trace/`` folders a timed-out run left for doctor). The streamed ``train.log`` already
holds every line; the head's copy replaces it (the same lines, flushed to the end).
"""

from __future__ import annotations

from pathlib import Path

from patchctl import proc
from patchctl.remote import ssh
from patchctl.remote.rsync import cause
from patchctl.validate import plan as planning
from patchctl.validate.errors import HostNotReady
from patchctl.validate.model import Trained

WANTED = ("train.log", "report.json", "report.png")
#: what a timed-out run leaves for doctor (py-spy stacks, NCCL flight recorder dumps, ray status), fetched
#: when the head has them
FOLDERS = ("stacks", "nccl_trace", "ray-status.txt")


def run(plan: planning.Plan, trained: Trained, master: ssh.Master) -> tuple[str, ...]:
    files = tuple(f for f in WANTED if f in trained.files) or WANTED[:2]
    files += tuple(f for f in FOLDERS if f in trained.files)
    plan.run_dir.mkdir(parents=True, exist_ok=True)
    done = proc.run(planning.fetch_argv(plan, files, master.socket), check=False, timeout=plan.cluster.timeout * 4)
    if done.returncode != 0:
        raise HostNotReady(
            plan.head.label,
            "fetch",
            f"the run's files could not be copied back ({cause(done.returncode, done.stderr)})",
            f"they are on the head in {plan.remote_run_dir}",
        )
    return tuple(str(Path(plan.run_dir) / f) for f in files if (plan.run_dir / f).exists())
