"""The batch script of a validate job, from one fixed template.

No value is spliced into it unquoted: the tree's root, the run folder, the interpreter and each
``env`` entry are quoted with :func:`shlex.quote` (and, being config values, hold no control
character: clusters.py refuses them at load); a variable's name is a shell name (cluster_nodes.py).
The partition, account, QOS, time and extra options never enter the script at all: they are
``sbatch`` arguments, one argv word each. The script does what verl's
``examples/slurm/ray_on_slurm.slurm`` does by hand, through ``patchctl.slurm.jobside``: the tree's
env file, then the Ray head on the first node and a worker on each other one (``srun``), the
trainer on the head, the report into the run folder.
"""

from __future__ import annotations

import shlex

from patchctl.validate.remote import PKG_DIR

TEMPLATE = """#!/bin/sh
# patchctl validate {run_id}: Ray on Slurm (verl's examples/slurm/ray_on_slurm.slurm, driven by patchctl)
R={root}
cd "$R" || {{ echo "patchctl: the tree $R is not on $(hostname)" >&2; exit 97; }}
[ -r .patchctl/env.sh ] || {{ echo "patchctl: no .patchctl/env.sh in $R; run patchctl migrate" >&2; exit 98; }}
. ./.patchctl/env.sh || exit 98
{exports}PYTHONPATH="$R/{pkg}${{PYTHONPATH:+:$PYTHONPATH}}"; export PYTHONPATH
PYTHONUNBUFFERED=1; export PYTHONUNBUFFERED
exec {python} -m patchctl.slurm.jobside {run_dir}
"""

#: without a shared root nothing of the login node is assumed visible on a node, not its home
#: either: the script enters this (the batch) node's own copy of the tree (``%n`` in the root is
#: its Slurm name, as migrate placed each copy), writes its output into the run folder there
#: (sbatch's own --output is /dev/null: a path sbatch could name may not exist on the node), and
#: waits for the package and the request, which patchctl stages through steps of the running job
OWN_TEMPLATE = """#!/bin/sh
# patchctl validate {run_id}: Ray on Slurm (verl's examples/slurm/ray_on_slurm.slurm, driven by patchctl)
R={root}
while case "$R" in *%n*) true;; *) false;; esac; do R="${{R%%\\%n*}}$SLURMD_NODENAME${{R#*\\%n}}"; done
RUN={run_dir}
[ -d "$R/.patchctl" ] || exit 97
(umask 077 && mkdir -p -- "$R/$RUN") || exit 97
exec >>"$R/$RUN/job.out" 2>&1
cd "$R" || exit 97
[ -r .patchctl/env.sh ] || {{ echo "patchctl: no .patchctl/env.sh in $R; run patchctl migrate" >&2; exit 98; }}
. ./.patchctl/env.sh || exit 98
{exports}n=0
while [ ! -e "$RUN/job.json" ]; do
    n=$((n + 1))
    [ "$n" -le {wait} ] || {{ echo "patchctl: no request in $R/$RUN after {wait} s" >&2; exit 99; }}
    sleep 1
done
PYTHONPATH="$R/{pkg}${{PYTHONPATH:+:$PYTHONPATH}}"; export PYTHONPATH
PYTHONUNBUFFERED=1; export PYTHONUNBUFFERED
exec {python} -m patchctl.slurm.jobside "$RUN"
"""

#: seconds the job's script waits for patchctl to stage the package and the request
WAIT = 300


def render(run_id: str, root: str, run_dir: str, python: str, env: dict[str, str], shared: bool = True) -> str:
    exports = "".join(f"{name}={shlex.quote(value)}; export {name}\n" for name, value in env.items())
    return (TEMPLATE if shared else OWN_TEMPLATE).format(
        run_id=run_id if run_id.isalnum() else "run",
        root=shlex.quote(root),
        exports=exports,
        pkg=PKG_DIR,
        python=shlex.quote(python),
        run_dir=shlex.quote(run_dir),
        wait=WAIT,
    )
