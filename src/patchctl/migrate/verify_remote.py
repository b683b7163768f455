"""Talking to a host's agent: one ssh round trip per call, the agent's source as ``python3 -c``
argv and the request (manifest of paths and sha256, generated files, expected tags) on stdin.

No shell string is built from user input: the host root, paths and contents travel inside the
JSON request, never on the command line.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl import proc
from patchctl.clusters import Cluster, Host
from patchctl.errors import PatchctlError
from patchctl.migrate import agent_cache, agent_check, agent_files, agent_io, agent_seal, remote_agent
from patchctl.migrate.fileset import FileSet
from patchctl.migrate.results import HostStatus
from patchctl.quoting import printable, quote_path
from patchctl.remote import ssh
from patchctl.tags import tag_regex

#: mismatch items listed per host; the count of the rest is given
SHOWN = 50


@functools.lru_cache(maxsize=1)
def _agent_b64() -> str:
    """The agent's program: its JSON and temp files' source (agent_io), its hash cache's, its file
    operations', its check's, its seal's, then its own (which imports the other five only where
    patchctl is installed, see remote_agent)."""
    files = (
        agent_io.__file__,
        agent_cache.__file__,
        agent_files.__file__,
        agent_check.__file__,
        agent_seal.__file__,
        remote_agent.__file__,
    )
    source = b"\n".join(Path(f).read_bytes() for f in files)
    return base64.b64encode(source).decode("ascii")


@dataclass(frozen=True)
class AgentReply:
    #: what the agent answered (see remote_agent.main); empty when it did not answer
    data: dict[str, Any] = field(default_factory=dict)
    #: None when the agent answered; UNREACHABLE or FAILED otherwise
    failure: HostStatus | None = None
    reason: str = ""


class Agent:
    """The agent on one host, started before its request is ready.

    Starting it costs the host an ssh session: the login shell with its rc files (a conda or
    pyenv ``init`` there easily takes 0.1-0.5 s) and python3's start-up, often more than the
    check itself. So migrate starts it while the tree is still hashed here or still arriving
    there, and hands it the request once that is done: the start-up is off the critical path.
    An agent that turns out not to be needed is closed with an empty request and does nothing.

    ``prescan`` (the tag rule and whether to re-hash everything): sent at once, so the agent
    starts reading the host's tree while the source is still hashed here (remote_agent.Prescan).
    With ``"seal": True`` in it the agent first answers whether the tree is still as a verified
    finish sealed it (``sealed``, see agent_seal). An agent started before its prescan is known
    (a migrate's session starts one per host as soon as the host is logged in, see
    migrate.session) gets it later through :meth:`send_prescan`: until then it only waits.
    """

    def __init__(
        self, cluster: Cluster, host: Host, control: Path | None = None, prescan: dict[str, Any] | None = None
    ) -> None:
        self.cluster, self.host = cluster, host
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 - outlives __init__: close() closes it
        self._missing = ""
        #: a seal answer still to read (see ``sealed``), and bytes read from stdout ahead of ``ask``
        self._seal_asked, self._early = False, b""
        #: whether the agent has its prescan (it reads the host's tree ahead of the request)
        self.prescanned = False
        self._proc: subprocess.Popen[bytes] | None = None
        try:
            self._proc = proc.spawn(
                ssh.python_argv(cluster, host, _agent_b64(), control),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._err,
            )
        except PatchctlError as exc:  # ssh itself is missing
            self._missing = str(exc)
        if prescan is not None:
            self.send_prescan(prescan)

    def send_prescan(self, prescan: dict[str, Any]) -> None:
        """Hand the agent its prescan (once, before ``sealed`` or ``ask``)."""
        assert not self.prescanned, "one prescan per agent"
        self._seal_asked, self.prescanned = bool(prescan.get("seal")), True
        if self._proc is not None and self._proc.stdin is not None:
            order = {"prescan": dict(prescan, root=self.host.root)}
            try:
                self._proc.stdin.write(json.dumps(order).encode("utf-8") + b"\n")
                self._proc.stdin.flush()
            except OSError:
                pass  # ssh already gone: ask() reports the host

    def sealed(self, timeout: float) -> str | None:
        """The digest the host's seal vouches for when one fresh walk found its tree as sealed, read
        from the agent's first line within ``timeout`` seconds; None when it is not sealed, on
        timeout, EOF or garbage, or when the prescan did not ask (``ask`` still works after)."""
        p = self._proc
        if not self._seal_asked or p is None or p.stdout is None:
            return None
        self._seal_asked = False  # one line, read once
        fd, deadline = p.stdout.fileno(), time.monotonic() + timeout
        while b"\n" not in self._early:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None  # what came so far stays in _early: ask() reads past it
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._early += chunk
        line, _, self._early = self._early.partition(b"\n")
        try:
            answer = json.loads(line)
        except ValueError:
            return None
        sealed = answer.get("sealed") if isinstance(answer, dict) else None
        return sealed if isinstance(sealed, str) else None

    def ask(self, request: dict[str, Any], timeout: float, manifest: bytes | None = None) -> AgentReply:
        """Send the request, wait up to ``timeout`` seconds for the reply (one use only).
        ``manifest``: the request's manifest, already JSON (shared by every host's request)."""
        if self._proc is None:
            return AgentReply({}, HostStatus.FAILED, self._missing or "the agent was already asked")
        p, self._proc = self._proc, None
        payload = json.dumps(dict(request, root=self.host.root)).encode("utf-8")
        if manifest is not None:  # one copy of the manifest per host in flight, not three
            payload = b"".join((payload[:-1], b', "manifest": ', manifest, b"}"))
        try:
            out, _ = p.communicate(payload, timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            return AgentReply(
                {},
                HostStatus.FAILED,
                f"no answer within {timeout:.0f} s; check the host's load, "
                f"or raise clusters.{self.cluster.name}.timeout",
            )
        self._err.seek(0)
        stderr = self._err.read().decode("utf-8", "replace")
        return _reply(self.cluster, self.host, p.returncode, (self._early + out).decode("utf-8", "replace"), stderr)

    def close(self) -> None:
        """End an agent that was never asked (EOF: it exits at once), and free its stderr file."""
        p, self._proc = self._proc, None
        if p is not None:
            try:
                p.communicate(b"", timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
        self._err.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def call(
    cluster: Cluster, host: Host, request: dict[str, Any], timeout: float, control: Path | None = None
) -> AgentReply:
    """One request, one round trip, started now."""
    with Agent(cluster, host, control) as agent:
        return agent.ask(request, timeout)


def _reply(cluster: Cluster, host: Host, returncode: int, stdout: str, stderr: str) -> AgentReply:
    if stdout.startswith('{"sealed"'):  # a prescan's seal answer (see Agent.sealed): the reply follows it
        stdout = stdout.partition("\n")[2]
    if returncode == 255:
        return AgentReply({}, HostStatus.UNREACHABLE, ssh.unreachable_reason(cluster, host, stderr))
    try:
        data = json.loads(stdout or "null")
    except ValueError:
        data = None
    if not isinstance(data, dict):
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        why = (
            f"{cluster.python} is not installed there (the check needs python3 >= 3.6; "
            f"set clusters.{cluster.name}.python)"
            if returncode == 127
            else f"the check exited with {returncode}: {tail}"
        )
        return AgentReply({}, HostStatus.FAILED, why)
    if "error" in data:
        return AgentReply(data, HostStatus.FAILED, f"the check failed on the host: {data['error']}")
    return AgentReply(data)


def tag_rule(tags: Iterable[str]) -> list[Any]:
    """``[pattern, needles]``: the regex of a tagged line and the words that make a file worth
    scanning; a rule that matches nothing when there are no tags."""
    names = sorted(set(tags))
    return [tag_regex(set(names)).pattern if names else r"(?!x)x", names]


def tags_request(fs: FileSet, rule: list[Any], generated: Iterable[str], cache: Any = None) -> dict[str, Any]:
    """The tag ``rule`` and the source's tagged-line inventory, scanned by the agent's own code so
    that both sides apply the same rules (``cache``: lines remembered from earlier runs)."""
    pattern, needles = rule
    if not needles:
        return {"pattern": pattern, "needles": [], "expected": []}
    leave_out, skip = set(generated), functools.lru_cache(maxsize=None)(agent_files.skipped)
    # the skip rule goes by folder: asked once per folder, not once per file
    paths = [p for p in fs.paths if p not in leave_out and not skip(p.rpartition("/")[0] + "/")]
    return {
        "pattern": pattern,
        "needles": needles,
        "expected": agent_check.tag_lines(str(fs.root), paths, pattern, needles, cache),
    }


def mismatches(reply: AgentReply) -> tuple[str, ...]:
    """What differs on the host, one item per file or tagged line, for the user to act on."""
    d = reply.data
    # names and lines come from the host: quoted, so none can forge a line of the report
    items = [f"{quote_path(path)}: {printable(why)}" for path, why in d.get("problems", [])]
    items += [
        f"{quote_path(p)}:{n}: tagged line on the host that the source lacks: {printable(t.strip())}"
        for p, n, t in d.get("tags_only_here", [])
    ]
    items += [
        f"{quote_path(p)}:{n}: tagged line missing on the host: {printable(t.strip())}"
        for p, n, t in d.get("tags_missing_here", [])
    ]
    if len(items) > SHOWN:
        items = [*items[:SHOWN], f"... and {len(items) - SHOWN} more"]
    return tuple(items)
