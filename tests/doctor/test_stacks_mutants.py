"""Reading ``py-spy dump`` text back (doctor/stacks.py): who a process is called, which thread says
what it does, which frame it waits in, and how deep a thread is kept. Each test fails on a bug the
mutation run planted (issue 41 req 8): the frame cap moved, the name of a process without a rank,
the main thread's choice, the frame shown when every frame is waiting machinery.
"""

from __future__ import annotations

from pathlib import Path

from patchctl.doctor.stacks import MAX_FRAMES, odd_one, parse, read_dir


def dump(*threads: str, process: str | None = "Process 812: python train.py") -> str:
    head = f"{process}\nPython v3.11.7 (/usr/bin/python3.11)\n\n" if process else ""
    return head + "\n".join(threads) + "\n"


def thread(name: str, *frames: str, ident: str = "812") -> str:
    return f'Thread {ident} (idle): "{name}"\n' + "".join(f"    {f}\n" for f in frames)


def test_a_deep_thread_keeps_its_innermost_frames_up_to_the_cap() -> None:
    frames = [f"f{i} (app.py:{i + 1})" for i in range(MAX_FRAMES + 5)]
    (stack,) = parse(dump(thread("MainThread", *frames)), "dump.txt")
    assert len(stack.threads[0].frames) == MAX_FRAMES == 200
    assert stack.threads[0].frames[-1].function == f"f{MAX_FRAMES - 1}"


def test_a_process_without_a_rank_is_named_by_its_pid_or_else_by_its_file() -> None:
    (by_pid,) = parse(dump(thread("MainThread", "step (app.py:3)")), "dump.txt")
    assert by_pid.rank is None and by_pid.who == "pid 812"
    (by_file,) = parse(dump(thread("MainThread", "step (app.py:3)"), process=None), "node2/hang.txt")
    assert by_file.pid is None and by_file.who == "node2/hang.txt"


def test_the_main_thread_says_where_the_process_waits_though_another_thread_is_listed_first() -> None:
    text = dump(
        thread("pin_memory", "pin_loop (torch/utils/data/_utils/pin_memory.py:50)", ident="900"),
        thread("MainThread", "all_reduce (torch/distributed/distributed_c10d.py:2050)", "update_actor (w.py:611)"),
    )
    (stack,) = parse(text, "rank0.txt")
    assert str(stack.waiting_at()) == "all_reduce (torch/distributed/distributed_c10d.py:2050)"


def test_a_main_thread_without_frames_gives_way_to_the_first_thread_that_has_some() -> None:
    text = dump(thread("MainThread"), thread("worker", "load_batch (data.py:12)", ident="901"))
    (stack,) = parse(text, "rank0.txt")
    assert stack.main() is not None and stack.main().name == "worker"  # type: ignore[union-attr]
    assert str(stack.waiting_at()) == "load_batch (data.py:12)"


def test_a_process_whose_threads_have_no_frames_waits_nowhere_known() -> None:
    (stack,) = parse(dump(thread("MainThread"), thread("other", ident="901")), "rank0.txt")
    assert stack.main() is None and stack.waiting_at() is None and stack.key() == ()


def test_a_thread_of_waiting_machinery_only_shows_its_innermost_frame() -> None:
    frames = ["wait (threading.py:320)", "join (threading.py:1112)", "_bootstrap (x.py:1)", "run (x.py:9)"]
    (stack,) = parse(dump(thread("MainThread", *frames)), "rank0.txt")
    assert str(stack.waiting_at()) == "wait (threading.py:320)"
    assert stack.key() == ("wait", "join", "_bootstrap")  # three frames from the waiting one: a place, not a trace


def test_a_dump_without_its_process_line_takes_the_pid_its_file_is_named_by() -> None:
    (stack,) = parse(dump(thread("MainThread", "step (app.py:3)"), process=None), "node2/rank-3-pid-812.txt")
    assert (stack.pid, stack.rank, stack.who) == (812, 3, "rank 3 (pid 812)")


def test_a_rank_in_the_command_line_names_a_process_whose_file_has_none_and_the_files_rank_wins() -> None:
    text = dump(thread("MainThread", "step (app.py:3)"), process="Process 812: python train.py --rank 3")
    (stack,) = parse(text, "dump.txt")
    assert (stack.rank, stack.who) == (3, "rank 3 (pid 812)")
    (named,) = parse(text, "rank5.txt")
    assert named.rank == 5


def test_a_dump_file_is_read_up_to_one_mib_and_only_a_plain_dump_file_is_read(tmp_path: Path) -> None:
    head = dump(thread("MainThread", "early (app.py:1)"))
    (tmp_path / "rank0.txt").write_text(head + ("#" * 1023 + "\n") * 1024 + "    late (app.py:2)\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text(dump(thread("MainThread", "secret (x.py:1)")))
    (tmp_path / "rank1.txt").symlink_to(outside)
    (tmp_path / "rank2.md").write_text(dump(thread("MainThread", "notes (x.py:1)")))
    (tmp_path / "rank3.txt").mkdir()
    stacks = read_dir(tmp_path)
    assert [(s.source, [f.function for f in s.threads[0].frames]) for s in stacks] == [("rank0.txt", ["early"])]


def test_three_ranks_are_judged_among_themselves_without_the_driver() -> None:
    stacks = [
        s
        for n, fn in enumerate(["all_reduce", "all_reduce", "compute_loss"])
        for s in parse(dump(thread("MainThread", f"{fn} (w.py:{n})", "update_actor (w.py:611)")), f"rank{n}.txt")
    ]
    stacks += parse(dump(thread("MainThread", "fit (ray_trainer.py:900)", "main (main_ppo.py:40)")), "driver.txt")
    odd = odd_one(stacks)
    assert odd is not None and odd.stack.rank == 2 and odd.others == 2


def test_a_long_command_line_is_kept_to_200_characters() -> None:
    command = "python -m verl.trainer.main_ppo " + "x" * 300
    (stack,) = parse(dump(thread("MainThread", "step (app.py:3)"), process=f"Process 812: {command}"), "dump.txt")
    assert stack.command == command[:200]


def test_frames_of_a_next_process_before_its_thread_line_join_no_thread_of_the_one_before() -> None:
    text = (
        dump(thread("MainThread", "step (app.py:3)"))
        + "Process 813: python worker.py\n    stray (app.py:9)\n"
        + thread("MainThread", "load (data.py:1)", ident="813")
    )
    first, second = parse(text, "ray_stack.txt")
    assert [f.function for f in first.threads[0].frames] == ["step"]
    assert [f.function for f in second.threads[0].frames] == ["load"]
