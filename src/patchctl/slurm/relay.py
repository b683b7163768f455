"""validate without a shared root: into and out of the running job through steps of that job.

A cluster whose compute nodes mount neither the tree nor the login node's home (node-local
scratch, a home on the login node alone) gives the job nothing patchctl wrote on the login node,
and patchctl nothing the job wrote on its nodes. Slurm itself reaches a running job's nodes from
the login node: ``srun --jobid=JOB --overlap`` starts a step on them, its stdin reaching every
task and its output coming back to srun. So, once the job runs (its script waits for them):

- :func:`stage`: patchctl's package, a tar on the stdin of one step on every node, unpacked into
  each node's own tree (slurm/node_agent.py ``stage``);
- :func:`send_request`: the run's request (with its token) on the stdin of one step on the batch
  node, written into the run folder there, 0600 (``request``): never on a disk of the login node;
- :class:`Stream`: one step on the batch node following the job's output file there (``tail
  -F``), read as it grows, as the login node reads it on a shared root; restarted at the offset
  read if it ends while the job runs;
- :func:`collect`: once the job's driver holds (jobside.py ``hold``), one step writes the run
  folder's files as a tar, unpacked here (regular files only, each inside the run folder), and
  lets the job end; a step that fails leaves the job holding, so the caller tries it again.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import queue
import subprocess
import tarfile
import threading
from pathlib import Path, PurePosixPath

from patchctl import proc
from patchctl.clusters import Cluster
from patchctl.slurm import login
from patchctl.validate import plan as planning

#: the most bytes a collected run folder may bring home (a report, its plot, the trainer's log)
MAX_BYTES = 1 << 30


def step(job_id: str, nodes: str, count: int) -> list[str]:
    """An ``srun`` step of the running job ``job_id`` on ``nodes`` (Slurm's list), one task each."""
    return [
        "srun",
        f"--jobid={job_id}",
        "--overlap",
        f"--nodes={count}",
        "--ntasks-per-node=1",
        f"--nodelist={nodes}",
        "--kill-on-bad-exit=0",
    ]


def _run(cluster: Cluster, words: list[str], data: bytes, timeout: float) -> tuple[int, bytes, str]:
    child = proc.spawn(
        login.argv(cluster, words), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        out, err = child.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        return 124, out, f"no answer from the job's step in {timeout:g} s"
    return child.returncode, out, err.decode("utf-8", "replace")


def package_tar() -> bytes:
    """patchctl's package as a tar (``patchctl/...``), without compiled files."""
    buf = io.BytesIO()

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if "__pycache__" in info.name.split("/") or not (info.isfile() or info.isdir()) else info

    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(planning.package_dir(), arcname="patchctl", filter=keep)
    return buf.getvalue()


def stage(cluster: Cluster, job_id: str, nodes: str, count: int) -> str:
    """The package into every node's own tree; "" or why not (one line)."""
    words = [*step(job_id, nodes, count), *login.agent_words(cluster, ["stage", cluster.root])]
    code, out, err = _run(cluster, words, package_tar(), 600)
    answers = login.answers(out.decode("utf-8", "replace"))
    bad = next((a for a in answers if "error" in a), None)
    if bad is not None:
        return f"{bad['node']}: {bad['error']}"
    if code != 0 or len(answers) < count:
        return f"the step staging patchctl's package ended with {code}: {login.tail(err)}"
    return ""


def send_request(cluster: Cluster, job_id: str, batch: str, run_rel: str, request: str) -> str:
    """The request into the batch node's run folder; "" or why not."""
    words = [*step(job_id, batch, 1), *login.agent_words(cluster, ["request", cluster.root, run_rel])]
    code, out, err = _run(cluster, words, request.encode(), 300)
    answers = login.answers(out.decode("utf-8", "replace"))
    if code != 0 or not answers or "error" in answers[0]:
        return f"the step writing the run's request ended with {code}: {login.tail(err)}"
    return ""


def node_run(cluster: Cluster, batch: str, run_rel: str) -> str:
    """The run folder on the batch node (its own tree)."""
    return str(PurePosixPath(login.job(cluster).node_root(cluster.root, batch)) / run_rel)


class Stream:
    """One step on the batch node following the job's output file from ``offset`` (bytes read)."""

    def __init__(self, cluster: Cluster, job_id: str, batch: str, path: str, offset: int) -> None:
        words = [*step(job_id, batch, 1), "tail", "-c", f"+{offset + 1}", "-F", "--", path]
        self.child = proc.spawn(
            login.argv(cluster, words), stdout=subprocess.PIPE, stderr=subprocess.PIPE, new_session=True
        )
        self.data: queue.Queue[str] = queue.Queue()
        #: srun's and slurmstepd's own lines (a step cancelled by the time limit says so here)
        self.said: queue.Queue[str] = queue.Queue()
        self._threads = [
            threading.Thread(target=self._read, daemon=True),
            threading.Thread(target=self._errors, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read(self) -> None:
        assert self.child.stdout is not None
        fd = self.child.stdout.fileno()
        decode = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        for chunk in iter(lambda: os.read(fd, 1 << 16), b""):
            self.data.put(decode.decode(chunk))

    def _errors(self) -> None:
        assert self.child.stderr is not None
        for raw in self.child.stderr:
            line = raw.decode("utf-8", "replace").strip()
            if line and line.split(":", 1)[0].rsplit("/", 1)[-1] != "tail":  # tail's own, as srun named it
                self.said.put(line)

    @property
    def alive(self) -> bool:
        return self.child.poll() is None or any(t.is_alive() for t in self._threads)

    def drain(self) -> tuple[str, list[str]]:
        """What arrived since the last call: the file's text, and srun's lines."""
        text, lines = [], []
        with contextlib.suppress(queue.Empty):
            while True:
                text.append(self.data.get_nowait())
        with contextlib.suppress(queue.Empty):
            while True:
                lines.append(self.said.get_nowait())
        return "".join(text), lines

    def close(self) -> None:
        if self.child.poll() is None:
            self.child.terminate()
            try:
                self.child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.child.kill()
                self.child.wait()
        for t in self._threads:
            t.join(timeout=5)


def collect(cluster: Cluster, job_id: str, batch: str, run: str, names: list[str], into: Path) -> tuple[list[str], str]:
    """The run folder's ``names`` from the batch node into ``into``: the names that arrived (a tar
    cut short still holds the files before the cut), and "" or why the step failed (one line)."""
    words = [*step(job_id, batch, 1), *login.agent_words(cluster, ["collect", run, *names])]
    code, out, err = _run(cluster, words, b"", 600)
    got = unpack(out, into)
    return got, "" if code == 0 else f"ended with {code}: {login.tail(err)}"


def unpack(data: bytes, into: Path) -> list[str]:
    """The tar's regular files into ``into``, each at its relative path inside it; anything else
    (a link, a device, a name leading out, past :data:`MAX_BYTES`) is left out."""
    got: list[str] = []
    total = 0
    top = into.resolve()
    with contextlib.suppress(tarfile.TarError, EOFError), tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        for member in tar:
            name = PurePosixPath(member.name)
            total += member.size
            if not member.isfile() or name.is_absolute() or ".." in name.parts or total > MAX_BYTES:
                continue
            dest = top.joinpath(*name.parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            if dest.parent.resolve() != top and top not in dest.parent.resolve().parents:
                continue
            src = tar.extractfile(member)
            if src is None:
                continue
            if dest.is_symlink():
                dest.unlink()
            dest.write_bytes(src.read())
            got.append(member.name)
    return got
