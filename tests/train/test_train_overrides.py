"""Overrides are refused as hydra would refuse them, before anything starts (issue 10, req. 7).

The port of hydra's override grammar (``patchctl.train.overrides``) is checked twice: with the
exact messages a user sees for the usual mistakes, and against hydra itself (a test
dependency) on a list of tricky forms and on generated strings.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from patchctl.train.overrides import BadOverride, parse

#: forms verl users write, all of which hydra 1.3 accepts in a single run
VALID = [
    "trainer.total_epochs=2",
    "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
    "~trainer.logger",
    "~trainer.logger=console",
    "++trainer.nnodes=2",
    "trainer.logger=[console,wandb]",
    'trainer.logger=["console"]',
    "trainer.project_name='my run'",
    'trainer.project_name="a,b"',
    "critic.model.path=null",
    "actor_rollout_ref.actor.optim.lr=1e-3",
    "actor_rollout_ref.actor.optim.lr=-1.5e-06",
    "data.train_batch_size=1_024",
    "data.train_files=/data/fake/train_tiny.parquet",
    "trainer.default_local_dir=${oc.env:HOME}/ckpt",
    "key=",
    "x.y={a:1,b:[2,3]}",
    "x=int(3)",
    "x=sort([3,1])",
    "hydra/job_logging=disabled",
    "actor@actor_rollout_ref.actor=dp_actor",
    "hydra.run.dir=/tmp/run",
    "a.0=1",
    "x=a:b",
    "x=[a b, c]",
    "x=1 ",
    "+actor_rollout_ref.rollout.engine_kwargs.vllm.attention_backend=FLASH_ATTN",
    "x=\\,",
    "x=inf",
    "x=.5",
]

#: (override, the message patchctl prints)
REFUSED = [
    ("=2", "override '=2': there is no key; write KEY=VALUE, e.g. trainer.total_epochs=2"),
    (
        "trainer n=2",
        "override 'trainer n=2': hydra cannot read ' n=2' at column 8; no spaces in the key; write "
        "KEY=VALUE as one argument, e.g. trainer.n_gpus_per_node=2",
    ),
    (
        "a.b=[1,2",
        "override 'a.b=[1,2': it ends before the value is complete (expected ] or ,); close every [, ( "
        "and { and every quote",
    ),
    (
        "x=(",
        "override 'x=(': unexpected '(' at column 3 (expected a value); check the brackets, quotes and commas; "
        "quote a value with special characters, e.g. key='a b'",
    ),
    ("oops", "override 'oops': no '=' after the key; write KEY=VALUE, e.g. trainer.total_epochs=2"),
    ("x='abc", 'override "x=\'abc": hydra cannot read "\'abc" at column 3; close the quote'),
    (
        "data.train_files=~/data/x.parquet",
        "override 'data.train_files=~/data/x.parquet': hydra cannot read "
        "'~/data/x.p' at column 18; quote the value, e.g. key='...'",
    ),
    (
        "x=a,b",
        "override 'x=a,b': it is a sweep, which a single run refuses; write a list as key=[a,b], or quote "
        "the value as key='a,b'",
    ),
    (
        "x=choice(1,2)",
        "override 'x=choice(1,2)': it is a sweep, which a single run refuses; write a list as "
        "key=[a,b], or quote the value as key='a,b'",
    ),
    ("x=foo(1)", "override 'x=foo(1)': foo(...) is not a hydra function; quote the value, e.g. x='foo(1)'"),
    (
        "x=a=b",
        "override 'x=a=b': unexpected '=' at column 4 (expected the end of the override); check the "
        "brackets, quotes and commas; quote a value with special characters, e.g. key='a b'",
    ),
]


@pytest.mark.parametrize("text", VALID)
def test_valid_forms_parse(text: str) -> None:
    assert parse(text).text == text


@pytest.mark.parametrize(("text", "message"), REFUSED)
def test_refused_with_one_line_that_says_what_to_do(text: str, message: str) -> None:
    with pytest.raises(BadOverride) as caught:
        parse(text)
    assert str(caught.value) == message


def test_parts() -> None:
    o = parse("+a.b=[1, 2]")
    assert (o.prefix, o.key, o.package, o.value, o.is_group) == ("+", "a.b", None, "[1, 2]", False)
    o = parse("~trainer.logger")
    assert (o.prefix, o.key, o.value) == ("~", "trainer.logger", None)
    o = parse("actor@actor_rollout_ref.actor=dp_actor")
    assert (o.key, o.package, o.is_group) == ("actor", "actor_rollout_ref.actor", True)
    assert parse("hydra/launcher=basic").is_group


def _hydra_accepts(text: str) -> bool:
    """What hydra says of ``text`` in a single run: parsed, not a sweep, a key to set."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        o = OverridesParser.create().parse_override(text)
    except Exception as exc:  # hydra raises HydraException and, evaluating a function's arguments, others
        # a function given arguments of the wrong type is hydra's evaluation, not the grammar
        return "while evaluating" in str(exc) and "Unknown function" not in str(exc)
    # patchctl also refuses an empty key (hydra's global package), which no verl override means
    return not o.is_sweep_override() and bool(o.key_or_group.strip("@"))


TRICKY = [
    *VALID,
    *(t for t, _ in REFUSED),
    "x=[",
    "x=]",
    "x={a}",
    "x={a:}",
    "x={:1}",
    "x={'a':1}",
    "x=[a,]",
    "x=${a",
    "x=a{b}",
    "x=(1)",
    "x=1(2)",
    "a..b=1",
    "a.=1",
    "0=1",
    "-a=1",
    "x=a&b",
    "x=a#b",
    "x=日本",
    " x=1",
    "x=  [1 , 2 ]  ",
    "x=a ,b",
    "x=shuffle(choice(1,2))",
    "x=a'b'",
    "x='a'b",
    "a/=1",
    "/a=1",
    "a@b@c=1",
    "x={a:1,}",
    "x=int(1",
    "x={a:[1}",
    "$a=1",
    "x=${}",
    "x=glob(*)",
    "x=interval(0,1)",
    "a/b@c.d=e",
]


@pytest.mark.parametrize("text", TRICKY)
def test_agrees_with_hydra(text: str) -> None:
    pytest.importorskip("hydra")
    try:
        parse(text)
        ours = True
    except BadOverride:
        ours = False
    assert ours == _hydra_accepts(text)


_PIECES = st.sampled_from(
    [
        *list("ab_x.=+~[](){},:'\"\\ $-1e0@/#\t"),
        "null",
        "true",
        "${a}",
        "int(",
        "choice(",
        "1.5",
        "[1,2]",
        "{a:1}",
        "'q r'",
    ]
)


@settings(max_examples=300, deadline=None)
@given(head=st.sampled_from(["x=", "+a.b=", "~k=", "a/b=", "k@p=", ""]), pieces=st.lists(_PIECES, max_size=8))
def test_agrees_with_hydra_on_generated_overrides(head: str, pieces: list[str]) -> None:
    pytest.importorskip("hydra")
    text = head + "".join(pieces)
    try:
        parse(text)
        ours = True
    except BadOverride:
        ours = False
    assert ours == _hydra_accepts(text), text
