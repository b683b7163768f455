"""A Slurm cluster's settings (``scheduler = "slurm"``), checked word by word when the config loads.

Every value here reaches a command line on the login node (``sbatch``, ``srun``, ``squeue``)
or the job's script: a partition, account or QOS is a Slurm name (letters, digits, ``_.-``), a
``gres`` a Slurm GRES list, each extra ``sbatch`` option one ``--long=value`` word, and none
may start a second option or carry a control character. Options patchctl sets itself from a key
(``--partition``, ``--time``...) are refused in the extra list, naming the key to use instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl.errors import ManifestError
from patchctl.schema import Field

#: the keys a Slurm cluster adds to (or replaces in) an ssh cluster's
SLURM_SCHEMA = {
    "scheduler": Field(str, True, '"slurm"', choices=("slurm",)),
    "login": Field(str, True, 'the ssh destination of a login node, e.g. "login1" or "me@hpc.example.org"'),
    "shared_root": Field(bool, False, "true when root is on a file system every compute node mounts"),
    "partition": Field(str, False, 'the partition to submit to, e.g. "gpu"'),
    "account": Field(str, False, 'the account to charge, e.g. "proj123"'),
    "qos": Field(str, False, 'the quality of service, e.g. "normal"'),
    "nodes": Field(int, False, "how many nodes the job asks for (default 1)"),
    "gpus_per_node": Field(int, False, "GPUs per node the job asks for (--gpus-per-node)"),
    "gres": Field(str, False, 'a generic-resource string instead of gpus_per_node, e.g. "gpu:a100:4"'),
    "cpus_per_task": Field(int, False, "CPUs of each node's task (--cpus-per-task): Ray's CPUs there"),
    "time": Field(str, False, 'the job\'s time limit, e.g. "00:30:00" or "1-00:00:00" (default "01:00:00")'),
    "sbatch": Field(list, False, 'extra sbatch options, e.g. ["--constraint=a100", "--exclusive"]', item=str),
}

#: a partition, account or QOS name
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
#: gpu[:type]:count, comma-separated
_GRES = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*(,[A-Za-z0-9_][A-Za-z0-9_.:-]*)*\Z")
#: one long option: --name or --name=value (the value one word: no blank, no quote)
_OPTION = re.compile(r"--[a-z][a-z0-9-]*(=[^\s'\"\\`$;]+)?\Z")
#: Slurm's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S
_TIME = re.compile(r"(?:(\d+)-(\d+)(?::(\d+)(?::(\d+))?)?|(\d+)(?::(\d+)(?::(\d+))?)?)\Z")

#: sbatch options patchctl sets from a key or needs for itself -> the key (or why)
_OWN_OPTIONS = {
    "--partition": "partition",
    "--account": "account",
    "--qos": "qos",
    "--nodes": "nodes",
    "--ntasks-per-node": "(one task per node: the job's Ray node)",
    "--ntasks": "(one task per node: the job's Ray node)",
    "--gpus-per-node": "gpus_per_node",
    "--gres": "gres",
    "--cpus-per-task": "cpus_per_task",
    "--time": "time",
    "--parsable": "(patchctl reads the job id)",
    "--output": "(the job's log goes to the run folder)",
    "--error": "(the job's log goes to the run folder)",
    "--chdir": "(the job runs in the tree)",
    "--wrap": "(the job's script is patchctl's)",
    "--job-name": "(patchctl names the job for its run)",
    "--requeue": "(a validate job is never requeued)",
}


@dataclass(frozen=True)
class SlurmSettings:
    #: the login node's ssh destination: every Slurm command runs there
    login: str
    #: whether ``root`` is on a file system every compute node mounts
    shared_root: bool = False
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    nodes: int = 1
    gpus_per_node: int | None = None
    gres: str | None = None
    cpus_per_task: int | None = None
    #: the job's time limit as written (Slurm's format) and in seconds
    time: str = "01:00:00"
    time_seconds: int = 3600
    #: extra sbatch options, each one ``--name[=value]`` word
    sbatch: tuple[str, ...] = ()

    def node_root(self, root: str, node: str) -> str:
        """The tree's path on ``node`` (``%n`` is the node's name; ``login`` on the login node)."""
        return root.replace("%n", node)

    @property
    def gpus(self) -> int:
        """GPUs per node the job gets (the count of a ``gres`` string's gpu entry; 0 without either)."""
        if self.gpus_per_node is not None:
            return self.gpus_per_node
        for part in (self.gres or "").split(","):
            words = part.split(":")
            if words[0] == "gpu":
                return int(words[-1]) if len(words) > 1 and words[-1].isdigit() else 1
        return 0

    def sbatch_options(self) -> list[str]:
        """The job's own options, from the keys, then the user's extra ones."""
        out = [f"--nodes={self.nodes}", "--ntasks-per-node=1", f"--time={self.time}", "--no-requeue"]
        for key in ("partition", "account", "qos", "gres"):
            if getattr(self, key) is not None:
                out.append(f"--{key}={getattr(self, key)}")
        if self.gpus_per_node is not None:
            out.append(f"--gpus-per-node={self.gpus_per_node}")
        if self.cpus_per_task is not None:
            out.append(f"--cpus-per-task={self.cpus_per_task}")
        return out + list(self.sbatch)


def time_seconds(text: str) -> int | None:
    """Seconds of a Slurm time string, or None when it is none of Slurm's formats."""
    m = _TIME.match(text.strip())
    if not m:
        return None
    d, h, mi, s, m1, s1, s2 = (int(g) if g else 0 for g in m.groups())
    if m.group(1) is not None:  # D-H[:M[:S]]
        return ((d * 24 + h) * 60 + mi) * 60 + s
    if m.group(7) is not None:  # H:M:S
        return (m1 * 60 + s1) * 60 + s2
    return m1 * 60 + s1  # M or M:S


def load(raw: dict[str, Any], file: Path, prefix: str, root: str) -> SlurmSettings:
    """The Slurm keys of one cluster table (its types already checked against the schema)."""

    def bad(key: str, problem: str, fix: str) -> ManifestError:
        return ManifestError(file, prefix + key, problem, fix)

    login = raw["login"]
    if login.startswith("-") or not login.strip() or any(c.isspace() for c in login):
        raise bad("login", f"{login!r} is not an ssh destination", 'write e.g. "login1" or "me@hpc.example.org"')
    for key in ("partition", "account", "qos"):
        if key in raw and not _NAME.match(raw[key]):
            raise bad(key, f"{raw[key]!r} is not a Slurm name", "use letters, digits, _ . and - (not starting with -)")
    if "gres" in raw and not _GRES.match(raw["gres"]):
        raise bad("gres", f"{raw['gres']!r} is not a GRES string", 'write e.g. "gpu:4" or "gpu:a100:4"')
    if "gres" in raw and "gpus_per_node" in raw:
        raise bad("gres", "conflicts with gpus_per_node", "keep one of gres and gpus_per_node")
    for key, least in (("nodes", 1), ("gpus_per_node", 0), ("cpus_per_task", 1)):
        if key in raw and raw[key] < least:
            raise bad(key, f"{raw[key]} is out of range", f"write {least} or more")
    time = raw.get("time", "01:00:00")
    seconds = time_seconds(time)
    if seconds is None or seconds <= 0:
        raise bad(
            "time",
            f"{time!r} is not a Slurm time limit",
            'write minutes ("30"), "HH:MM:SS" ("00:30:00") or "D-HH:MM:SS" ("1-00:00:00")',
        )
    extra = raw.get("sbatch", [])
    for i, option in enumerate(extra):
        name = option.split("=", 1)[0]
        if name in _OWN_OPTIONS or (name == "--no-requeue"):
            what = _OWN_OPTIONS.get(name, "(patchctl sets it)")
            fix = f"set the key {what} instead" if not what.startswith("(") else f"remove it {what}"
            raise bad(f"sbatch[{i}]", f"{option!r} conflicts with an option patchctl sets", fix)
        if not _OPTION.match(option):
            raise bad(
                f"sbatch[{i}]",
                f"{option!r} is not one long sbatch option",
                'write each as one word "--name" or "--name=value", e.g. "--constraint=a100"',
            )
    shared = raw.get("shared_root", False)
    if shared and "%n" in root:
        raise bad("root", "holds %n (a path per node) but shared_root is true", "remove %n or set shared_root = false")
    return SlurmSettings(
        login,
        shared,
        raw.get("partition"),
        raw.get("account"),
        raw.get("qos"),
        raw.get("nodes", 1),
        raw.get("gpus_per_node"),
        raw.get("gres"),
        raw.get("cpus_per_task"),
        time,
        seconds,
        tuple(extra),
    )
