"""The cluster config's keys, described once for the ``--help`` of every command that reads them.

``migrate --help`` named some optional keys and left out ``address``, ``gpus``, ``ifname``,
``ray_port``, ``paths`` and ``preflight_skip`` (#19). The schema in :mod:`patchctl.clusters`
decides which keys exist; this module says what each does, and a test fails when a key of the
schema has no line here, in the README's reference or in ``docs/patchctl.toml``.
"""

from __future__ import annotations

import textwrap

#: ``[clusters.NAME]`` keys -> what each does (the order ``--help`` lists them in)
CLUSTER_KEYS = {
    "hosts": '(required) the ssh destinations: "node1", "user@10.0.0.2", or a table (below).',
    "root": '(required) the tree\'s absolute path on the hosts, e.g. "/root/verl_Uky"; never "/".',
    "ssh_config": "an ssh config file passed to ssh and rsync with -F (relative: to the config file).",
    "python": "the hosts' interpreter: migrate's check runs with it, validate trains with it (default python3).",
    "profile": 'which variable set .patchctl/env.sh exports: "standard" or "fast-load".',
    "paths": "table of the values git_ignore.py holds there (DATA_DIR, MODEL_PATH, ...); train and "
    "verify --env read them too.",
    "env": "table of variables for every process on every host (env.sh, validate's Ray and trainer).",
    "include": "paths to send although they look like run outputs (checkpoints/keep).",
    "exclude": "paths never to send.",
    "max_delete": "the most files migrate --delete removes per host (default 100).",
    "bwlimit": "rsync's bandwidth limit per host in KiB/s (default 0: none).",
    "timeout": "seconds without progress before a host counts as failed (default 60).",
    "gpus": "GPUs Ray offers per host (default: what nvidia-smi counts); a host's own gpus wins.",
    "ray_port": "the Ray head's GCS port (default 6379); a host's own ray_port wins.",
    "ifname": "the network interface for NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME; a host's own wins.",
    "preflight_skip": 'verify --env checks validate leaves out on this cluster, e.g. ["vllm"].',
    "health": "table of validate's health-check bars (storage_bytes, busbw_fail_percent, ...; README).",
}
#: keys of a host written as a table, ``hosts = [{ ssh = "gpu1", ... }]``
HOST_KEYS = {
    "ssh": "(required) the ssh destination.",
    "root": "this host's tree path, instead of the cluster's root.",
    "address": 'the IP the other hosts reach this one at (Ray\'s node IP), e.g. "10.0.0.11".',
    "gpus": "the GPUs Ray offers on this host.",
    "ray_port": "the GCS port when this host is the head.",
    "ifname": 'this host\'s interface for NCCL and Gloo, e.g. "ib0".',
    "env": 'variables for this host only, after the cluster\'s, e.g. { CUDA_VISIBLE_DEVICES = "0,1" }.',
}

#: the keys a ``scheduler = "slurm"`` cluster adds (it has no hosts and no gpus: the job gives them)
SLURM_KEYS = {
    "scheduler": '"slurm": the cluster is reached through a login node and runs as Slurm jobs.',
    "login": '(required) the login node\'s ssh destination, e.g. "login1"; every Slurm command runs there.',
    "shared_root": "true when root is on a file system every compute node mounts (default false: "
    "each node's own copy, sent from the login node; %n in root is the node's name).",
    "partition": 'the partition the job asks for, e.g. "gpu" (default: Slurm\'s).',
    "account": "the account the job is charged to.",
    "qos": "the job's quality of service.",
    "nodes": "how many nodes the job asks for (default 1); Ray's head runs on the first.",
    "gpus_per_node": "GPUs per node (--gpus-per-node); Ray offers them.",
    "gres": 'a GRES string instead of gpus_per_node, e.g. "gpu:a100:4".',
    "cpus_per_task": "CPUs of each node's task (--cpus-per-task); Ray's CPUs must fit in them.",
    "time": 'the job\'s time limit: "30", "00:30:00" or "1-00:00:00" (default "01:00:00").',
    "sbatch": 'extra sbatch options, each one word, e.g. ["--constraint=a100", "--exclusive"].',
}


def _lines(keys: dict[str, str], width: int = 78) -> list[str]:
    out = []
    for key, text in keys.items():
        out += textwrap.wrap(text, width, initial_indent=f"  {key:<15} ", subsequent_indent=" " * 18)
    return out


def epilog() -> str:
    """The reference as a click epilog (``\\b``: click keeps these lines as they are)."""
    return "\n".join(
        [
            "\b",
            "Cluster config: [clusters.NAME] in --config FILE, else ./patchctl.toml, else",
            "~/.config/patchctl/config.toml (complete example: docs/patchctl.toml).",
            "A control character (newline, tab, ESC) in any name or path is a config error.",
            *_lines(CLUSTER_KEYS),
            "",
            "\b",
            'A host written as a table, hosts = [{ ssh = "gpu1", address = "10.0.0.11" }]:',
            *_lines(HOST_KEYS),
            "",
            "\b",
            'A Slurm cluster, scheduler = "slurm", has no hosts and no gpus, and these keys',
            "(README: On a Slurm cluster):",
            *_lines(SLURM_KEYS),
        ]
    )


EPILOG = epilog()
