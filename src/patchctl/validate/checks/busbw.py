"""Judging measured all-reduce busbw: against a figure, against peers, and which node is slow.

Pure: what the hosts reported in, an :class:`~patchctl.validate.checks.interconnect.Interconnect`
out. A group is ``fail`` below ``busbw_fail_percent`` of its figure (the config's, else the public
one of :mod:`expected`) or below ``peer_percent`` of its best peer (the fastest group of the same
kind and size: with one slow node most pairs include it, so a median would be slow too),
``warn`` below ``busbw_warn_percent`` of its figure. With three nodes or more, a node every one
of whose pairs is slow, while some other pair is not, is named as the slow node.
"""

from __future__ import annotations

import statistics
from typing import Any

from patchctl.validate.checks import expected
from patchctl.validate.checks.interconnect import Group, Interconnect, _causes
from patchctl.validate.checks.settings import Settings
from patchctl.validate.model import HostPreflight


def _figure(
    backend: str,
    kind: str,
    hosts: tuple[str, ...],
    n: int,
    s: Settings,
    info: dict[str, dict[str, Any]],
    gpu: dict[str, str],
    gpus: int,
) -> expected.Figure | str:
    """The figure a group is held to, or why none applies (the report row's text then)."""
    if kind == "node":
        if s.expected_intra_gbps:
            return expected.Figure(float(s.expected_intra_gbps), "clusters.NAME.health.expected_intra_gbps")
        if backend != "nccl":
            return f"no figure: {backend} on CPUs (published figures are NCCL's)"
        h = info.get(hosts[0], {})
        nvls = h.get("env", {}).get("NCCL_NVLS_ENABLE", "1") != "0"
        fig = expected.intra(gpu.get(hosts[0], ""), n, h.get("topology", ""), nvls)
        return fig or expected.no_intra(gpu.get(hosts[0], ""), n, h.get("topology", ""))
    if s.expected_inter_gbps:
        return expected.Figure(float(s.expected_inter_gbps), "clusters.NAME.health.expected_inter_gbps")
    return expected.inter([info.get(h, {}) for h in hosts], gpus, backend)


def judge(
    backend: str,
    raw: list[dict[str, Any]],
    info: dict[str, dict[str, Any]],
    preflight: tuple[HostPreflight, ...],
    s: Settings,
    seconds: float,
) -> Interconnect:
    labels = [p.label for p in preflight]
    gpu = {p.label: str(p.stack.get("gpu") or "") for p in preflight}
    gpus = min((p.gpus for p in preflight), default=0)
    groups = []
    for g in raw:
        hosts = tuple(
            labels[int(i)]
            for i in (
                g["label"].split("-")
                if g["kind"] == "pair"
                else [g["label"]]
                if g["kind"] == "node"
                else range(len(labels))
            )
        )
        found = _figure(backend, g["kind"], hosts, int(g["n"]), s, info, gpu, gpus)
        fig = found if isinstance(found, expected.Figure) else None
        status, note = "pass", ""
        if not g.get("correct", True):
            status, note = "fail", "the all-reduce returned wrong sums"
        elif fig is not None and g["busbw"] < fig.gbps * s.busbw_fail_percent / 100:
            status, note = "fail", f"below {s.busbw_fail_percent}% of the expected {fig.gbps:g} GB/s"
        elif fig is not None and g["busbw"] < fig.gbps * s.busbw_warn_percent / 100:
            status, note = "warn", f"below {s.busbw_warn_percent}% of the expected {fig.gbps:g} GB/s"
        if int(g["n"]) == 1:
            algbw = g["sizes"][-1]["algbw"] if g["sizes"] else 0.0
            note = f"1 rank: busbw is 0 by nccl-tests' definition; algbw {algbw:.3g} GB/s; {note}".rstrip("; ")
        if g.get("stopped_early"):
            note = (note + "; " if note else "") + "sweep stopped early (interconnect_seconds)"
        groups.append(
            Group(
                g["kind"],
                hosts,
                int(g["n"]),
                float(g["busbw"]),
                tuple(g["sizes"]),
                fig.gbps if fig else None,
                fig.source if fig else str(found),
                status,
                note,
            )
        )
    groups = _peers(groups, s)
    return Interconnect(
        backend, tuple(sorted(groups, key=_order)), tuple(_findings(groups, info, labels)), info, round(seconds, 2)
    )


def _order(g: Group) -> tuple[int, tuple[str, ...]]:
    return ({"node": 0, "pair": 1, "cluster": 2}[g.kind], g.hosts)


def _failed(g: Group, note: str) -> Group:
    return Group(
        g.kind,
        g.hosts,
        g.ranks,
        g.busbw,
        g.sizes,
        g.expected,
        g.source,
        "fail",
        note + ("; " + g.note if g.note else ""),
    )


def _peers(groups: list[Group], s: Settings) -> list[Group]:
    """Groups far below their peers fail (same kind, same rank count; never the whole cluster).

    A pair is held to the median of the *other* pairs: one bad cable or switch port stands out
    however fast the rest are, and one unusually fast pair moves no bar. With three nodes, one
    slow node is in two of the three pairs, so a pair of it has one slow and one fast peer; the
    node is therefore also held to the median of the pairs without it, and when every pair with it
    is below that, they all fail. FAIL, not warn: a ring or tree all-reduce over the whole cluster
    runs at its slowest link, so one pair at half speed halves every step's gradient sync.
    """
    out = []
    p = s.peer_percent
    for g in groups:
        others = [o.busbw for o in groups if o is not g and o.kind == g.kind and o.ranks == g.ranks]
        if g.kind != "cluster" and others and g.busbw < (mid := statistics.median(others)) * p / 100:
            g = _failed(g, f"below {p}% of the median {mid:.3g} GB/s of its {len(others)} peer(s)")
        out.append(g)
    pairs = [g for g in out if g.kind == "pair"]
    hosts = sorted({h for g in pairs for h in g.hosts})
    for h in hosts if len(hosts) >= 3 else []:
        mine = [g for g in pairs if h in g.hosts]
        rest = [g.busbw for g in pairs if h not in g.hosts]
        mid = statistics.median(rest) if rest else 0.0
        if mine and rest and all(g.busbw < mid * p / 100 for g in mine):
            note = f"node {h}: every pair with it below {p}% of the median {mid:.3g} GB/s of the pairs without it"
            out = [_failed(g, note) if g in mine and g.status != "fail" else g for g in out]
    return out


def _findings(groups: list[Group], info: dict[str, dict[str, Any]], labels: list[str]) -> list[str]:
    out = []
    pairs = [g for g in groups if g.kind == "pair"]
    slow = [g for g in pairs if g.status != "pass"]
    named = set()
    if len(labels) >= 3 and len(slow) < len(pairs):
        for h in labels:
            mine = [g for g in pairs if h in g.hosts]
            if mine and all(g.status != "pass" for g in mine):
                named.add(h)
                rates = ", ".join(f"{' <-> '.join(g.hosts)} {g.busbw:.3g}" for g in mine)
                out.append(
                    f"node {h} is slow: every pair with it is ({rates} GB/s); likely cause: "
                    f"{_causes('pair', (h,), info)}"
                )
    for g in groups:
        if g.status == "pass" or (g.kind == "pair" and named & set(g.hosts)) or (g.kind == "cluster" and named):
            continue
        what = {"node": "within node", "pair": "between", "cluster": "across the cluster"}[g.kind]
        subject = " and ".join(g.hosts) if g.kind == "pair" else g.hosts[0] if g.kind == "node" else ""
        out.append(
            f"{g.status}: all-reduce {what} {subject}".rstrip() + f": {g.busbw:.3g} GB/s busbw, {g.note}; "
            f"likely cause: {_causes(g.kind, g.hosts, info)}"
        )
    return out
