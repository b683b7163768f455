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
S="$PWD"
R={root}
{own_root}cd "$R" || {{ echo "patchctl: the tree $R is not on $(hostname)" >&2; exit 97; }}
[ -r .patchctl/env.sh ] || {{ echo "patchctl: no .patchctl/env.sh in $R; run patchctl migrate" >&2; exit 98; }}
. ./.patchctl/env.sh || exit 98
{exports}PYTHONPATH="${pkg_base}/{pkg}${{PYTHONPATH:+:$PYTHONPATH}}"; export PYTHONPATH
PYTHONUNBUFFERED=1; export PYTHONUNBUFFERED
exec {python} -m patchctl.slurm.jobside {run_dir}
"""

#: without a shared root: every ``%n`` in the root is this (the batch) node's Slurm name, as
#: migrate placed each node's copy; the package and the run's control folder are where sbatch ran
OWN_ROOT = 'while case "$R" in *%n*) true;; *) false;; esac; do R="${R%%\\%n*}$SLURMD_NODENAME${R#*\\%n}"; done\n'


def render(run_id: str, root: str, run_dir: str, python: str, env: dict[str, str], shared: bool = True) -> str:
    exports = "".join(f"{name}={shlex.quote(value)}; export {name}\n" for name, value in env.items())
    return TEMPLATE.format(
        run_id=run_id if run_id.isalnum() else "run",
        root=shlex.quote(root),
        own_root="" if shared else OWN_ROOT,
        exports=exports,
        pkg_base="R" if shared else "S",
        pkg=PKG_DIR,
        python=shlex.quote(python),
        run_dir=shlex.quote(run_dir) if shared else '"$S"/' + shlex.quote(run_dir),
    )
