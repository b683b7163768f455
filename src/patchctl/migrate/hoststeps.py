"""The values one host's phases hand on (see ``hostrun``): what rsync sent so far, what a check
found, how a transfer ended, and how a verified host ends. Frozen, so no phase changes what an
earlier one returned."""

from __future__ import annotations

from dataclasses import dataclass

from patchctl.migrate import transfer, verdicts, verify_remote
from patchctl.migrate.results import HostStatus
from patchctl.migrate.verify_remote import AgentReply


@dataclass(frozen=True)
class Tally:
    """What rsync has sent to the host in this run so far, over all of its transfers."""

    #: files whose content was sent
    files: int = 0
    #: bytes sent for them (rsync's %b: after delta compression)
    bytes: int = 0

    def plus(self, item: transfer.Item) -> Tally:
        """This tally with one more file sent: ``item``."""
        return Tally(self.files + 1, self.bytes + item.sent)


@dataclass(frozen=True)
class Found:
    """What the result reports from the host's first answered check."""

    #: files --delete removed there
    deleted: tuple[str, ...] = ()
    #: generated files written there
    rendered: tuple[str, ...] = ()

    @classmethod
    def of(cls, reply: AgentReply) -> Found:
        return cls(tuple(reply.data["deletions"]), tuple(reply.data["rendered"]))


@dataclass(frozen=True)
class Checked:
    """The output of the check and verify phases: the agent's answer, and what the result reports."""

    reply: AgentReply
    found: Found

    @property
    def problems(self) -> list[list[str]]:
        """``[path, what differs]`` for each file of the manifest that differs on the host."""
        problems: list[list[str]] = self.reply.data["problems"]
        return problems


@dataclass(frozen=True)
class Sent:
    """The output of the send and repair phases: rsync's outcome, and the run's totals after it."""

    transfer: transfer.TransferResult
    tally: Tally

    @property
    def returncode(self) -> int:
        return self.transfer.returncode


def ending(checked: Checked, repaired: tuple[str, ...]) -> tuple[HostStatus, str, tuple[str, ...]]:
    """How a verified host ends, with the reason and what still differs: ok, repaired (the
    ``repaired`` items were re-sent and now match), or mismatch."""
    left = verify_remote.mismatches(checked.reply)
    if not left and not repaired:
        return HostStatus.OK, "", ()
    if not left:
        return HostStatus.REPAIRED, verdicts.repaired_reason(len(repaired)), ()
    return HostStatus.MISMATCH, verdicts.mismatch_reason(checked.reply.data, len(left), bool(repaired)), left
