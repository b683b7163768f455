"""patchctl.records behaves as dataclasses does for the classes it makes (issue 39.13).

Each test builds the same class body twice, once with ``@dataclass`` and once with ``@record``,
and checks that what code can observe (construction, defaults, repr, equality, hashing, frozen
assignment, inheritance, and the ``dataclasses`` functions) is the same.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from patchctl import records

Maker = Callable[..., Any]
BOTH = [
    pytest.param((dataclasses.dataclass, dataclasses.field), id="dataclasses"),
    pytest.param((records.record, records.field), id="records"),
]


def build(make: tuple[Maker, Maker]) -> dict[str, type]:
    """A frozen class with defaults, a factory, a hidden and an uncompared field; a subclass of it;
    a mutable one."""
    deco, fld = make

    @deco(frozen=True)
    class Hit:
        path: str
        line: int
        text: str = ""
        tags: list[str] = fld(default_factory=list, compare=False)
        lines: tuple[str, ...] = fld(default=(), repr=False)
        kind: ClassVar[str] = "hit"

    @deco(frozen=True)
    class Wider(Hit):
        extra: int = 0

    @deco
    class Line:
        target: str = "."
        patchsets: list[str] = fld(default_factory=list)

    return {"Hit": Hit, "Wider": Wider, "Line": Line}


@pytest.mark.parametrize("make", BOTH)
def test_a_record_is_built_read_and_compared_as_a_dataclass(make: tuple[Maker, Maker]) -> None:
    c = build(make)
    Hit, Wider, Line = c["Hit"], c["Wider"], c["Line"]
    h = Hit("a.py", 3)
    assert (h.path, h.line, h.text, h.tags, h.lines) == ("a.py", 3, "", [], ())
    assert repr(h) == "build.<locals>.Hit(path='a.py', line=3, text='', tags=[])"  # lines: repr=False
    assert Hit("a.py", 3, tags=["x"]) == h  # tags: compare=False
    assert Hit("a.py", 4) != h
    assert hash(Hit("a.py", 3, "t", lines=("x",))) == hash(Hit("a.py", 3, "t", lines=("x",)))
    assert Hit("a.py", 3).tags is not Hit("a.py", 3).tags  # a fresh list each
    assert Hit.kind == "hit" and Hit.text == "" and "tags" not in Hit.__dict__
    assert Hit.__match_args__ == ("path", "line", "text", "tags", "lines")
    w = Wider("b.py", 1, extra=2)
    assert repr(w) == "build.<locals>.Wider(path='b.py', line=1, text='', tags=[], extra=2)"
    assert w != Hit("b.py", 1) and Hit("b.py", 1) != w  # another class is never equal
    assert Line() == Line(".", []) and Line().patchsets is not Line().patchsets
    assert Line.__hash__ is None  # eq without frozen: unhashable
    line = Line()
    line.target = "t"
    assert line == Line("t")


@pytest.mark.parametrize("make", BOTH)
def test_a_record_refuses_what_a_dataclass_refuses(make: tuple[Maker, Maker]) -> None:
    Hit = build(make)["Hit"]
    h = Hit("a.py", 3)
    with pytest.raises(AttributeError, match="cannot assign to field 'path'"):
        h.path = "b.py"
    with pytest.raises(AttributeError, match="cannot delete field 'line'"):
        del h.line
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'line'"):
        Hit("a.py")
    with pytest.raises(TypeError, match="unexpected keyword argument 'lien'"):
        Hit("a.py", 3, lien=4)
    with pytest.raises(TypeError, match="multiple values for argument 'path'"):
        Hit("a.py", 3, path="b.py")
    with pytest.raises(TypeError, match="positional arguments but 7 were given"):
        Hit("a.py", 3, "", [], (), 9)
    assert (h.path, h.line) == ("a.py", 3)


@pytest.mark.parametrize("make", BOTH)
def test_dataclasses_functions_and_records_own_agree(make: tuple[Maker, Maker]) -> None:
    Hit, Wider = build(make)["Hit"], build(make)["Wider"]
    h = Wider("a.py", 3, "t", ["x"], extra=5)
    assert dataclasses.is_dataclass(h)
    assert [f.name for f in dataclasses.fields(h)] == ["path", "line", "text", "tags", "lines", "extra"]
    assert dataclasses.replace(h, line=4) == records.replace(h, line=4) == Wider("a.py", 4, "t", ["x"], extra=5)
    moved = records.replace(h, extra=6)
    assert (type(moved), moved.extra, moved.text) == (Wider, 6, "t") and h.extra == 5
    as_dict = {"path": "a.py", "line": 3, "text": "t", "tags": ["x"], "lines": (), "extra": 5}
    assert dataclasses.asdict(h) == records.asdict(h) == as_dict
    assert records.asdict(h)["tags"] is not h.tags  # copied, as dataclasses.asdict copies
    assert records.asdict(Hit("a.py", 3)) == {"path": "a.py", "line": 3, "text": "", "tags": [], "lines": ()}


def test_a_record_says_which_default_breaks_the_order() -> None:
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @records.record
        class Bad:
            a: int = 0
            b: int


def test_a_record_refuses_a_post_init_it_would_never_call() -> None:
    """``__post_init__`` is one of what a record leaves out: a class defining it is refused where
    it is made, not left to skip its check silently at every construction."""
    with pytest.raises(TypeError, match="Checked: a record does not call __post_init__; use @dataclass"):

        @records.record(frozen=True)
        class Checked:
            a: int

            def __post_init__(self) -> None:
                raise ValueError("never reached by a record")


@pytest.mark.parametrize("make", BOTH)
def test_a_field_compares_and_a_class_attribute_holds_its_default(make: tuple[Maker, Maker]) -> None:
    """``field(default_factory=...)`` leaves the field compared (only ``compare=False`` hides
    it), and ``field(default=...)`` leaves the default as the class's attribute."""
    c = build(make)
    Hit, Line = c["Hit"], c["Line"]
    assert Line("t", ["a"]) != Line("t", ["b"])
    assert Hit.lines == () and Line.target == "."
    assert Hit.__init__.__qualname__ == "build.<locals>.Hit.__init__"  # what a traceback names
    assert Hit.__repr__.__qualname__ == "build.<locals>.Hit.__repr__"
    _, fld = make
    with pytest.raises(ValueError, match="cannot specify both default and default_factory"):
        fld(default=(), default_factory=tuple)


@pytest.mark.parametrize("make", BOTH)
def test_a_class_keeps_its_own_methods_and_compares_to_nothing_else(make: tuple[Maker, Maker]) -> None:
    deco, _ = make

    @deco
    class Keyed:
        key: str
        note: str = ""

        def __repr__(self) -> str:
            return f"<{self.key}>"

        def __hash__(self) -> int:
            return hash(self.key)

    k = Keyed("a", "n")
    assert repr(k) == "<a>" and hash(k) == hash("a") and {k} == {Keyed("a", "n")}
    Hit = build(make)["Hit"]
    # NotImplemented, so that Python asks the other side and then falls back to identity
    assert (Hit("a.py", 3) == "a.py") is False and (Hit("a.py", 3) != "a.py") is True
    assert Hit("a.py", 3).__eq__("a.py") is NotImplemented


@pytest.mark.parametrize("make", BOTH)
def test_a_plain_subclass_of_a_frozen_record_sets_its_own_attributes_only(make: tuple[Maker, Maker]) -> None:
    """The frozen ``__setattr__`` refuses every name on the record's own class, and only the
    fields on a plain (undecorated) subclass: that one may keep attributes of its own."""
    Hit = build(make)["Hit"]

    class Plain(Hit):  # type: ignore[misc,valid-type]
        pass

    # first of all: the fields a plain subclass answers are its base's (made on first ask)
    assert [f.name for f in dataclasses.fields(Plain)] == ["path", "line", "text", "tags", "lines"]
    p = Plain("a.py", 3)
    p.note = "x"
    assert p.note == "x"
    del p.note
    assert not hasattr(p, "note")
    with pytest.raises(AttributeError, match="cannot assign to field 'path'"):
        p.path = "b.py"
    with pytest.raises(AttributeError, match="cannot delete field 'line'"):
        del p.line
    h = Hit("a.py", 3)
    with pytest.raises(AttributeError, match="cannot assign to field 'note'"):
        h.note = "x"
    with pytest.raises(AttributeError, match="cannot delete field 'note'"):
        del h.note
    assert (p.path, p.line, h.path) == ("a.py", 3, "a.py")


@pytest.mark.parametrize("make", BOTH)
def test_a_record_with_every_argument_and_a_wrong_keyword_is_refused(make: tuple[Maker, Maker]) -> None:
    Hit = build(make)["Hit"]
    with pytest.raises(TypeError, match="unexpected keyword argument 'lien'"):
        Hit("a.py", 3, "", [], (), lien=4)


@pytest.mark.parametrize("make", BOTH)
def test_dataclasses_fields_of_a_record_are_a_dataclass_s(make: tuple[Maker, Maker]) -> None:
    """What ``dataclasses.fields`` answers, asked first of a fresh class: the defaults, the
    factories, positional fields, and the same Field objects every time."""
    Wider = build(make)["Wider"]
    got = dataclasses.fields(Wider)
    assert {f.name: (f.default, f.default_factory) for f in got} == {
        "path": (dataclasses.MISSING, dataclasses.MISSING),
        "line": (dataclasses.MISSING, dataclasses.MISSING),
        "text": ("", dataclasses.MISSING),
        "tags": (dataclasses.MISSING, list),
        "lines": ((), dataclasses.MISSING),
        "extra": (0, dataclasses.MISSING),
    }
    assert [f.kw_only for f in got] == [False] * 6
    assert dataclasses.fields(Wider) == got  # Field has no __eq__: the same objects


@pytest.mark.parametrize("make", BOTH)
def test_asdict_turns_nested_records_into_dicts(make: tuple[Maker, Maker]) -> None:
    deco, _ = make
    Hit = build(make)["Hit"]

    @deco
    class Found:
        first: Any
        hits: list[Any]
        by_name: dict[str, Any]

    found = Found(Hit("a.py", 1), [Hit("b.py", 2)], {"c": Hit("c.py", 3)})
    one = {"path": "a.py", "line": 1, "text": "", "tags": [], "lines": ()}
    want = {
        "first": one,
        "hits": [{**one, "path": "b.py", "line": 2}],
        "by_name": {"c": {**one, "path": "c.py", "line": 3}},
    }
    assert records.asdict(found) == dataclasses.asdict(found) == want
    assert records.asdict(found)["by_name"] is not found.by_name  # copied
