"""The weight-sync socket collision (two verl runs on one host, verl#6233) is told apart from any
other "address already in use": only verl's ``rl-colocate-zmq-`` socket makes it."""

from __future__ import annotations

from patchctl.doctor import diagnose, load_signatures

SIGNATURES = load_signatures()


def _top(lines: list[str]) -> str | None:
    top = diagnose(lines, SIGNATURES).root
    return top.signature.id if top else None


def test_the_colocate_socket_is_the_collision_and_says_what_to_run() -> None:
    found = diagnose(
        [
            "(WorkerDict pid=7) zmq.error.ZMQError: Address already in use "
            "(addr='ipc:///tmp/rl-colocate-zmq-01000000-replica-0-rank-0.sock')"
        ],
        SIGNATURES,
    )
    assert found.root is not None and found.root.signature.id == "weight-sync-socket-in-use"
    assert found.root.confidence == "likely"
    assert "ss -xlp | grep rl-colocate-zmq" in found.root.signature.resolves.command


def test_another_zmq_address_in_use_stays_a_port_collision() -> None:
    """vllm-project/vllm#7196: vLLM's own TCP socket, no verl weight sync in it."""
    assert _top(["zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:5570')"]) == "port-in-use"
    assert _top(["zmq.error.ZMQError: Address already in use (addr='ipc:///tmp/verl_vllm_zmq_12_root.ipc')"]) == (
        "port-in-use"
    )
