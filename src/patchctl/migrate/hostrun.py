"""One host's run: check → send → verify → repair.

Each phase is a method with typed arguments that returns a frozen value (``Checked``, ``Sent``: hoststeps)
or, where the phase decides how the host ends, its ``HostResult``; :meth:`HostRun.run` holds the
order and nothing else. What rsync sent so far travels as a ``Tally`` from phase to phase, so
no state is updated behind the order's back. A host that fails is a result, never an exception,
so it cannot stop the others (they run on their own threads, see ``runner``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from patchctl.clusters import Host
from patchctl.migrate import hostsend, seal, state, verdicts, verify_remote
from patchctl.migrate.hoststeps import Checked, Found, Sent, Tally, ending
from patchctl.migrate.prepare import Pending, Prepared, repair_list
from patchctl.migrate.results import HostResult, HostStatus, Phase, Progress, ProgressFn
from patchctl.migrate.timing import PhaseClock
from patchctl.migrate.verify_remote import Agent, AgentReply
from patchctl.remote import ssh
from patchctl.remote.lock import RootLock


class HostRun:
    """One host of a migrate, logged in (see runner._connected), the tree ``pending`` (prepared
    here while the host runs): its ``label`` names it in the results, ``rendered`` are its
    generated files, every step goes through its ssh ``master``, and the agents it starts are
    closed with ``agents``."""

    def __init__(
        self,
        pending: Pending,
        host: Host,
        label: str,
        rendered: dict[str, str],
        master: ssh.Master,
        emit: ProgressFn,
        agents: ExitStack,
        root: Callable[[], RootLock],
    ) -> None:
        self.pending, self.cluster, self.options = pending, pending.cluster, pending.options
        self.host, self.label, self.rendered = host, label, rendered
        self.master, self.emit, self.agents = master, emit, agents
        #: the host's root (remote.lock), asked for once: for a host its seal may settle
        #: (``may_seal``) only if the check goes on; any other host's root is asked for by the
        #: caller as soon as it is logged in. Once held, its ``empty`` lets the first transfer go
        #: without --delay-updates (see transfer)
        self.root = root
        self.clock = PhaseClock(0.0)

    @property
    def tree(self) -> Prepared:
        """The prepared tree, waited for (and its preparation's time entered as the file set's);
        a sealed source prepares it only once a host asks (see prepare)."""
        self.pending.want()
        tree = self.pending.ready.result()
        self.clock.fileset = tree.seconds
        return tree

    @functools.cached_property
    def expected(self) -> str:
        """What the host holds once it verified this tree, as the local state records it."""
        return state.digest(self.pending.summary.result().manifest_sha256, self.rendered)

    @functools.cached_property
    def last(self) -> str | None:
        """What the host held when it last verified ok, as the local state remembers it."""
        return state.last_verified(self.cluster, self.host)

    @property
    def may_seal(self) -> bool:
        """Whether the host's seal may settle this run: it verified a tree from here before, and
        the options allow it (see Options.sealable)."""
        return self.last is not None and self.options.sealable

    @functools.cached_property
    def seal_as(self) -> str:
        """What the host's seal names once it verified this tree (see seal.for_host)."""
        return seal.for_host(self.pending.summary.result(), self.rendered)

    def run(self, agent: Agent) -> HostResult:
        """Settled by the host's seal when it names this very tree (``sealed``: nothing sent or
        locked); otherwise the cheaper of two orders, both ending verified on the host, files the
        verification still finds differing re-sent by content and verified again (repaired).

        - check first, then rsync and check again only if the check found files to send: when the
          host verified this very tree last time (a re-run), and always with --delete (its guard
          must stop the host before any byte is sent);
        - rsync first, then check: when the tree changed since (a first run, an edit), so no round
          trip is spent before a transfer that is needed anyway. A host that never verified a
          tree (a first run) starts rsync as soon as the paths are listed here, while the files
          are still hashed: the check after it waits for their digests.

        ``agent`` is already started; each later check's agent is started when the step before it
        begins (``start_agent``), so its start-up overlaps that step.
        """
        if self.options.dry_run:
            return self.plan(agent)
        found: Found | None = None
        if self.may_seal:
            # a changed source (its walk not sealed) asks for a tree no host's seal names: the
            # root is asked for at once, beside the preparation, not after the host answered
            ended = self.sealed(agent) if self.pending.sealed.result() else None
            if ended is not None:
                return ended
            refused = self.root().wait()
            if refused:
                return self.end(Tally(), HostStatus.FAILED, refused)
        if self.options.delete or (self.last is not None and self.last == self.expected):
            checked = self.check(agent, Tally())
            if isinstance(checked, HostResult):
                return checked
            if not checked.problems:
                return self.verdict(checked, Tally())
            found, agent = checked.found, self.start_agent()  # for the check after the transfer
        fresh = self.root().empty  # asked for and held by now: by the caller, or above
        sent = self.send(self.pending.listed.result().path(), Tally(), empty_root=fresh)
        if sent.returncode not in (0, 255) and found is None:
            # rsync creates only the last component of a missing root; the check creates all of it
            checked = self.check(agent, sent.tally)
            if isinstance(checked, HostResult):
                return checked
            if not checked.reply.data["root_exists"]:
                agent = self.start_agent()
                sent = self.send(self.pending.listed.result().path(), sent.tally, empty_root=fresh)
        if sent.returncode != 0:
            return self.transfer_failed(sent, found)
        verified = self.verify(agent, sent.tally, found, "sent, but not verified: ")
        if isinstance(verified, HostResult):
            return verified
        differing = verdicts.differing(self.tree, verified.reply)
        return self.repair(verified, differing, sent.tally) if differing else self.verdict(verified, sent.tally)

    def sealed(self, agent: Agent) -> HostResult | None:
        """The host verified, without a request or a byte sent, when its agent finds the tree as
        it was when it last verified it, and that was this very tree: the seal it kept then
        (remote agent_seal: every file's stat, the rule of the source's hash cache) names what the
        source asks now. None: the host's seal does not settle it (a first run here, an edit on
        either side, a tamper), and the check goes on as without one."""
        self.pending.summary.result()  # what the source asks: from its own seal, or once prepared
        self.clock.fileset = time.monotonic() - self.pending.began
        self.emit(Progress(self.label, Phase.CHECKING, phases=self.clock.phases()))
        began = time.monotonic()
        answer = agent.sealed(self.cluster.timeout)
        self.clock.verify += time.monotonic() - began
        if answer is None or answer != self.seal_as:
            return None
        return self.end(Tally(), HostStatus.OK, "", verified=True, sealed=True)

    def start_agent(self) -> Agent:
        """An agent for a later check, started now so that its start-up (an ssh session, the login
        shell, python3) overlaps the step before that check."""
        return self.agents.enter_context(Agent(self.cluster, self.host, self.master.socket))

    def plan(self, agent: Agent) -> HostResult:
        """--dry-run: the files that differ there (what a run sends), what --delete would remove,
        which generated files would change; the host's agent only reads."""
        reply = self.ask(agent, Phase.CHECKING, Tally(), action="plan")
        if reply.failure:
            return self.end(Tally(), reply.failure, reply.reason)
        changes, files, size = verdicts.planned_changes(self.tree, reply.data)
        would = Tally(files, size)
        if reply.data["delete_refused"]:
            return self.end(
                would, HostStatus.FAILED, verdicts.guard(self.cluster, len(reply.data["deletions"])), changes=changes
            )
        return self.end(
            would,
            HostStatus.PLANNED,
            "" if reply.data["root_exists"] else f"{self.host.root} does not exist yet",
            changes=changes,
        )

    def check(self, agent: Agent, tally: Tally) -> Checked | HostResult:
        """The agent's ``finish`` before a transfer: it creates the root, applies the delete guard,
        writes the generated files and deletes, then reports what still differs."""
        reply = self.ask(agent, Phase.CHECKING, tally)
        if reply.failure:
            return self.end(tally, reply.failure, reply.reason)
        if reply.data["delete_refused"]:
            return self.end(tally, HostStatus.FAILED, verdicts.guard(self.cluster, len(reply.data["deletions"])))
        return Checked(reply, Found.of(reply))

    def send(
        self,
        files_from: Path,
        tally: Tally,
        checksum: bool | None = None,
        phase: Phase = Phase.TRANSFERRING,
        empty_root: bool = False,
    ) -> Sent:
        """rsync of ``files_from`` over the host's master connection, the files sent shown live
        (see hostsend); ``checksum``: compare by content (default: as the options say);
        ``empty_root``: into a root that held no tree (see transfer)."""

        def show(now: Tally) -> None:
            self.emit(Progress(self.label, phase, now.files, now.bytes, phases=self.clock.phases()))

        return hostsend.send(
            self.cluster,
            self.host,
            self.pending.root,
            files_from,
            tally,
            checksum=self.options.checksum if checksum is None else checksum,
            control=self.master.socket,
            clock=self.clock,
            show=show,
            empty_root=empty_root,
        )

    def verify(
        self, agent: Agent, tally: Tally, found: Found | None, unverified: str, earlier: tuple[str, ...] = ()
    ) -> Checked | HostResult:
        """The agent's ``finish`` after a transfer (no deleting): what differs on the host now.
        ``unverified`` begins the reason when the check cannot run; ``earlier``: the differences
        a repair set out to fix, listed when it cannot be verified."""
        reply = self.ask(agent, Phase.VERIFYING, tally, delete=False)
        if reply.failure:
            return self.end(tally, reply.failure, unverified + reply.reason, found, mismatches=earlier)
        return Checked(reply, found or Found.of(reply))  # no deletions: a verification never deletes

    def repair(self, verified: Checked, differing: list[str], tally: Tally) -> HostResult:
        """Files altered on the host with their size and time kept pass rsync's quick check, so a
        plain re-run would never resend them (#10): resend exactly those, by content, and verify."""
        agent = self.start_agent()
        sent = self.send(repair_list(self.tree, differing), tally, checksum=True, phase=Phase.REPAIRING)
        earlier = verify_remote.mismatches(verified.reply)
        if sent.returncode != 0:
            return self.transfer_failed(sent, verified.found, earlier)
        again = self.verify(agent, sent.tally, verified.found, "re-sent differing files, but not verified: ", earlier)
        if isinstance(again, HostResult):
            return again
        return self.verdict(again, sent.tally, verdicts.repair_items(verified.reply, differing))

    def ask(self, agent: Agent, phase: Phase, tally: Tally, action: str = "finish", **extra: object) -> AgentReply:
        """One request to the host's agent: the tree's manifest, the host's generated files, the
        options; ``extra`` overrides (``delete=False`` for a verification)."""
        self.emit(Progress(self.label, phase, tally.files, tally.bytes, phases=self.clock.phases()))
        opts, tree = self.options, self.tree
        request = {
            "rendered": self.rendered,
            "delete": opts.delete,
            "max_delete": self.cluster.max_delete,
            "tags": tree.tags,
            "provenance": tree.provenance,
            "action": action,
            "rehash": opts.checksum,
            "seal_as": self.seal_as if opts.sealable else None,
            **extra,
        }
        began = time.monotonic()
        reply = agent.ask(request, tree.timeout, tree.manifest)
        self.clock.checked(time.monotonic() - began, reply.data)
        return reply

    def transfer_failed(self, sent: Sent, found: Found | None, earlier: tuple[str, ...] = ()) -> HostResult:
        """A failed rsync ends the host; exit 12 or 255 with the master gone means the host was lost."""
        code = sent.returncode
        status, reason = verdicts.transfer_failed(code, sent.transfer.stderr, code in (12, 255) and self.master.lost())
        return self.end(sent.tally, status, reason, found, mismatches=earlier)

    def verdict(self, checked: Checked, tally: Tally, repaired: tuple[str, ...] = ()) -> HostResult:
        """How a verified host ends: ok, repaired, or mismatch with what still differs."""
        status, reason, left = ending(checked, repaired)
        verified = status is not HostStatus.MISMATCH
        return self.end(tally, status, reason, checked.found, verified=verified, mismatches=left, repaired=repaired)

    def end(
        self,
        tally: Tally,
        status: HostStatus,
        reason: str,
        found: Found | None = None,
        *,
        verified: bool = False,
        mismatches: tuple[str, ...] = (),
        repaired: tuple[str, ...] = (),
        changes: tuple[str, ...] = (),
        sealed: bool = False,
    ) -> HostResult:
        """The host's result, timed from its login; a verified host's tree is remembered (see state)."""
        found = found or Found()
        result = HostResult(
            self.label,
            self.host.root,
            status,
            tally.files,
            tally.bytes,
            time.monotonic() - self.master.started,
            verified,
            reason,
            mismatches=mismatches,
            deleted=found.deleted,
            changes=changes,
            rendered=found.rendered,
            repaired=repaired,
            phases=self.clock.phases(),
            files_read=self.clock.files_read,
            sealed=sealed,
        )
        self.emit(Progress(self.label, Phase.DONE, result.files_sent, result.bytes_sent, status, result.phases))
        if verified:
            state.remember(self.cluster, self.host, self.expected)
        return result
