"""Dataclasses without ``dataclasses``: the classes a plain ``verify`` builds as it starts.

``@dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__`` (and a frozen one's
``__setattr__``, ``__delattr__`` and ``__hash__``) as source text and runs ``exec`` on it, and a
class without a docstring gets one from ``inspect.signature``. For the ~30 classes on verify's
path that was a quarter of a ``verify --json``'s instructions (issue 39.13, measured with
callgrind), and importing ``dataclasses`` brought ``inspect``, ``dis`` and ``tokenize`` along.
:func:`record` builds the same methods from closures over the field list: nothing is compiled
as the class is made. The objects are as few as a command's patches, so a generic ``__init__``
costs nothing a user notices.

For mypy these names *are* ``dataclasses``' own (``TYPE_CHECKING``), so a record is checked
as a dataclass is. At run time a record still answers ``dataclasses.fields``, ``replace``,
``asdict`` and ``is_dataclass``: its ``__dataclass_fields__`` is made (importing
``dataclasses``) the first time something asks for it. The verify path itself uses
:func:`replace` and :func:`asdict` from here, which import nothing.

Supported: ``frozen``, defaults, ``field(default=, default_factory=, repr=, compare=)`` and
inheritance from another record, as ``@dataclass`` does them; ``eq`` is always on and
``order``, ``slots``, ``kw_only``, ``__post_init__`` and ``InitVar`` are not (a class that needs
them stays a ``@dataclass``).
"""

from __future__ import annotations

#: ``typing.TYPE_CHECKING`` without importing typing: mypy reads any ``TYPE_CHECKING`` as true
TYPE_CHECKING = False
if TYPE_CHECKING:
    from dataclasses import asdict, field, replace
    from dataclasses import dataclass as record

__all__ = ["FrozenInstanceError", "asdict", "field", "record", "replace"]


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen record (``dataclasses.FrozenInstanceError``'s twin)."""


_MISSING = object()

#: the attribute that holds a record's fields, base classes' first
_FIELDS = "__record_fields__"


class _Field:
    """One field: what ``dataclasses.Field`` holds that a record uses."""

    __slots__ = ("compare", "default", "default_factory", "name", "repr", "type")

    def __init__(self, default: object, default_factory: object, repr: bool, compare: bool) -> None:
        self.name = ""
        self.type: object = None
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare


def _field_of(
    *, default: object = _MISSING, default_factory: object = _MISSING, repr: bool = True, compare: bool = True
) -> object:
    """``dataclasses.field`` for a record."""
    if default is not _MISSING and default_factory is not _MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return _Field(default, default_factory, repr, compare)


def _record_of(cls: type | None = None, /, *, frozen: bool = False) -> object:
    """``@dataclass`` / ``@dataclass(frozen=True)`` for a record."""

    def wrap(c: type) -> type:
        return _process(c, frozen)

    return wrap if cls is None else wrap(cls)


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return isinstance(text, str) and (text.startswith(("ClassVar", "typing.ClassVar")))


def _process(cls: type, frozen: bool) -> type:
    if "__post_init__" in cls.__dict__:  # never called here: make it a @dataclass instead
        raise TypeError(f"{cls.__qualname__}: a record does not call __post_init__; use @dataclass for this class")
    fields: dict[str, _Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in base.__dict__.get(_FIELDS, ()):
            fields[f.name] = f
    # the class's own annotations (strings, under ``from __future__ import annotations``); not
    # inspect.get_annotations, whose import is what this module saves
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, _MISSING)
        f = value if isinstance(value, _Field) else _Field(value, _MISSING, True, True)
        f.name, f.type = name, annotation
        fields[name] = f
        if isinstance(value, _Field):  # the class attribute is the default, as dataclasses leaves it
            if f.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    ordered = tuple(fields.values())
    seen_default = False
    for f in ordered:
        has_default = f.default is not _MISSING or f.default_factory is not _MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        seen_default = seen_default or has_default
    made: dict[str, object] = {
        _FIELDS: ordered,
        "__match_args__": tuple(f.name for f in ordered),
        "__dataclass_fields__": _LazyDataclassFields(),
    }
    for name, method in _methods(cls, ordered, frozen).items():
        if name in ("__init__", "__repr__", "__eq__") and name in cls.__dict__:
            continue  # the class's own, as dataclasses keeps it
        if callable(method):
            method.__qualname__ = f"{cls.__qualname__}.{name}"  # type: ignore[attr-defined]
        made[name] = method
    for name, value in made.items():
        setattr(cls, name, value)
    return cls


def _methods(cls: type, fields: tuple[_Field, ...], frozen: bool) -> dict[str, object]:
    names = tuple(f.name for f in fields)
    shown = tuple(f.name for f in fields if f.repr)
    compared = tuple(f.name for f in fields if f.compare)
    setter = object.__setattr__  # the frozen __setattr__'s way past itself

    n = len(fields)

    def bind(self: object, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[object, ...]:
        """Every field's value, from a call that does not give them all in order."""
        if len(args) > n:
            given = f"{n + 1} positional arguments but {len(args) + 1} were given"
            raise TypeError(f"{type(self).__qualname__}.__init__() takes {given}")
        values = list(args)
        for f in fields[: len(args)]:
            if f.name in kwargs:
                raise TypeError(f"{type(self).__qualname__}.__init__() got multiple values for argument {f.name!r}")
        for f in fields[len(args) :]:
            value = kwargs.pop(f.name, _MISSING)
            if value is _MISSING:
                if f.default is not _MISSING:
                    value = f.default
                elif f.default_factory is not _MISSING:
                    value = f.default_factory()  # type: ignore[operator]
                else:
                    raise TypeError(
                        f"{type(self).__qualname__}.__init__() missing 1 required positional argument: {f.name!r}"
                    )
            values.append(value)
        if kwargs:
            raise TypeError(
                f"{type(self).__qualname__}.__init__() got an unexpected keyword argument {next(iter(kwargs))!r}"
            )
        return tuple(values)

    def __init__(self: object, *args: object, **kwargs: object) -> None:
        if kwargs or len(args) != n:
            args = bind(self, args, kwargs)
        # the instance's own attributes, as the object.__setattr__ of a dataclass's __init__ sets them
        # (a field is never a descriptor of its class): one call, not one per field
        self.__dict__.update(zip(names, args, strict=True))

    def __repr__(self: object) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return tuple(getattr(self, n) for n in compared) == tuple(getattr(other, n) for n in compared)
        return NotImplemented

    out: dict[str, object] = {"__init__": __init__, "__repr__": __repr__, "__eq__": __eq__}
    if frozen:

        def __setattr__(self: object, name: str, value: object) -> None:
            if type(self) is cls or name in names:
                raise FrozenInstanceError(f"cannot assign to field {name!r}")
            setter(self, name, value)

        def __delattr__(self: object, name: str) -> None:
            if type(self) is cls or name in names:
                raise FrozenInstanceError(f"cannot delete field {name!r}")
            object.__delattr__(self, name)

        def __hash__(self: object) -> int:
            return hash(tuple(getattr(self, n) for n in compared))

        out.update(__setattr__=__setattr__, __delattr__=__delattr__, __hash__=__hash__)
    elif "__hash__" not in cls.__dict__ or cls.__dict__["__hash__"] is None:
        out["__hash__"] = None  # eq without frozen: unhashable, as a dataclass is
    return out


class _LazyDataclassFields:
    """``__dataclass_fields__``, made the first time ``dataclasses`` asks for it (``fields``,
    ``replace``, ``asdict``, ``is_dataclass``, pytest's diff of two records)."""

    def __get__(self, obj: object, owner: type) -> dict[str, object]:
        import dataclasses

        made = {}
        for f in owner.__dict__.get(_FIELDS, ()) or getattr(owner, _FIELDS):
            kw: dict[str, object] = {"repr": f.repr, "compare": f.compare, "kw_only": False}
            if f.default is not _MISSING:
                kw["default"] = f.default
            if f.default_factory is not _MISSING:
                kw["default_factory"] = f.default_factory
            real = dataclasses.field(**kw)  # type: ignore[call-overload]
            real.name, real.type = f.name, f.type
            real._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
            made[f.name] = real
        type.__setattr__(owner, "__dataclass_fields__", made)  # asked once per class
        return made


def _replace_of(obj: object, /, **changes: object) -> object:
    """``dataclasses.replace`` for a record, and for a dataclass (``dataclasses``' own)."""
    if not hasattr(type(obj), _FIELDS):
        import dataclasses

        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    for f in getattr(obj, _FIELDS):
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return type(obj)(**changes)


def _asdict_of(obj: object) -> dict[str, object]:
    """``dataclasses.asdict`` for a record of plain values (lists, dicts and tuples copied, nested
    records made dicts, as ``dataclasses.asdict`` does), and for a dataclass (``dataclasses``' own)."""
    if not hasattr(type(obj), _FIELDS):
        import dataclasses

        made: dict[str, object] = dataclasses.asdict(obj)  # type: ignore[call-overload]
        return made
    return {f.name: _plain(getattr(obj, f.name)) for f in getattr(obj, _FIELDS)}


def _plain(value: object) -> object:
    if hasattr(type(value), _FIELDS):
        return _asdict_of(value)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_plain(k), _plain(v)) for k, v in value.items())
    return value


if not TYPE_CHECKING:
    record = _record_of
    field = _field_of
    replace = _replace_of
    asdict = _asdict_of
