"""Reading a job from the login node: its state line, the events its output file has grown by,
and, once it ended, what ended it, in one line.

One ssh per poll asks both (``scontrol show job -o`` and the output file from the offset read
so far), through a fixed ``sh -c`` script whose only inputs are argv words: the job id (digits),
the offset (digits) and the file's path.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

#: scontrol's line, a separator, then the new bytes of the output file
POLL = 'scontrol show job -o "$1" 2>&1; echo "@@patchctl-poll@@"; tail -c +"$2" -- "$3" 2>/dev/null; exit 0'
SEPARATOR = "@@patchctl-poll@@\n"
_FIELD = re.compile(r"(\w+)=(\S*)")
#: srun's line naming the node Slurm lost
_NODE_FAILURE = re.compile(r"srun: error: Node failure on ([A-Za-z0-9_.-]+)")

#: Slurm's states in which the job is over
ENDED = (
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
)
#: the job's script's own exit codes before its driver starts (script.py), for a job whose output
#: never reached patchctl (without a shared root it is on the node, and the script may end first)
SCRIPT_EXITS = {
    "97": "the job's script found no migrated tree at the cluster's root on its node (run patchctl migrate)",
    "98": "the job's script found no .patchctl/env.sh in the tree on its node (run patchctl migrate)",
    "99": "the run's request never reached the job's node",
}
#: the states in which Slurm, not the job's driver, ended the job
ENDED_BY_SLURM = ("TIMEOUT", "NODE_FAIL", "CANCELLED", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE")


@dataclass(frozen=True)
class JobState:
    state: str
    reason: str = ""
    nodes: str = ""
    exit_code: str = ""
    #: "" when scontrol no longer knows the job (past MinJobAge) or could not be asked
    raw: str = ""
    #: the node running the job's script (and its driver), once the job runs
    batch_host: str = ""

    @property
    def ended(self) -> bool:
        return self.state in ENDED


def parse_state(text: str) -> JobState:
    """The job's line of ``scontrol show job -o`` (an unknown job: state ``UNKNOWN``)."""
    line = next((ln for ln in text.splitlines() if "JobState=" in ln), "")
    if not line:
        return JobState("UNKNOWN", raw=text.strip()[-300:])
    fields = dict(_FIELD.findall(line))
    nodes = fields.get("NodeList", "")
    return JobState(
        fields.get("JobState", "UNKNOWN"),
        fields.get("Reason", ""),
        "" if nodes == "(null)" else nodes,
        fields.get("ExitCode", ""),
        line,
        "" if fields.get("BatchHost", "(null)") == "(null)" else fields.get("BatchHost", ""),
    )


@dataclass
class Output:
    """The job's output file as read so far: its events, and its other lines (srun's messages)."""

    offset: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    other: list[str] = field(default_factory=list)
    _partial: str = ""

    def feed(self, data: str) -> list[dict[str, Any]]:
        """The events completed by ``data``."""
        self.offset += len(data.encode("utf-8", "surrogateescape"))
        text = self._partial + data
        lines = text.split("\n")
        self._partial = lines.pop()
        new = []
        for line in lines:
            try:
                doc = json.loads(line)
            except ValueError:
                doc = None
            if isinstance(doc, dict) and "event" in doc:
                new.append(doc)
            elif line.strip():
                self.other = [*self.other, line.strip()][-40:]
        self.events += new
        return new

    def last(self, name: str) -> dict[str, Any] | None:
        return next((e for e in reversed(self.events) if e.get("event") == name), None)


def split_poll(stdout: str) -> tuple[str, str]:
    head, sep, rest = stdout.partition(SEPARATOR)
    return (head, rest) if sep else (stdout, "")


def ended_cause(job_id: str, state: JobState, out: Output, limit: str, cancelled_by_us: bool) -> tuple[str, str]:
    """``(stage-or-kind, one line)`` for a job that ended without the driver's verdict."""
    stage = _stage(out)
    srun = next((ln for ln in reversed(out.other) if "srun: error" in ln), "")
    if state.state == "TIMEOUT":
        return "time-limit", (
            f"job {job_id} hit its time limit ({limit}) during {stage}; raise the cluster's time, "
            "or pass --timeout to stop the trainer before it"
        )
    if state.state == "NODE_FAIL":
        lost = next((m.group(1) for ln in out.other if (m := _NODE_FAILURE.search(ln))), None)
        which = f"node {lost}" if lost else "a node"
        return "node-failure", (
            f"job {job_id} lost {which} (NODE_FAIL) during {stage}; see `sinfo -R` on the login node, "
            "and leave the node out (--exclude in the cluster's sbatch) until it is back"
        )
    if state.state == "OUT_OF_MEMORY":
        return "oom", f"job {job_id} was killed by the cgroup's OOM killer during {stage}; ask for more memory (sbatch)"
    if state.state == "CANCELLED" and not cancelled_by_us:
        return "cancelled", f"job {job_id} was cancelled by someone else (scancel) during {stage}"
    code = state.exit_code.split(":")[0]
    said = f"exit code {state.exit_code or '?'}" + (f": {SCRIPT_EXITS[code]}" if code in SCRIPT_EXITS else "")
    tail = srun or (out.other[-1] if out.other else said)
    return "job-failed", f"job {job_id} ended {state.state} during {stage} without a verdict: {tail[:300]}"


def _stage(out: Output) -> str:
    """How far the job got, from its events."""
    for name, stage in (
        ("train-line", "training"),
        ("train-plan", "training"),
        ("ray-formed", "training"),
        ("ray-node", "ray-up"),
        ("preflight", "ray-up"),
        ("allocation", "preflight"),
    ):
        if out.last(name) is not None:
            return stage
    return "start-up"
