"""Where an edit goes in a Python file, and why: the one home of placement (issue 38 requirement 9).

:func:`locate` is the one entry point for an edit: ``locate(edit, text, path) -> Placement``, for
a structural patch's parameters in a file's text (:mod:`.where`). Apply, verify, revert, markers,
matrix, drift and the ``--repo`` history walk all reach it through the ``structural`` kind.
The scopes an edit sits in are placement's too (:mod:`.scopes`): which def or class holds an
edit (:func:`~.scopes.enclosing`), whether a text still defines it (:func:`~.scopes.has`), and
where it went when upstream moved it, and why (:func:`~.scopes.went`). The history walk and the
3-way check ask these, and the structural kind finds a patch's scope, through one scope finder
over one parse per text (:func:`~.anchors.definitions` of :func:`~.anchors.parsed`'s tree).
Underneath, what used to be spread over six modules of ``kinds/`` and the walk's own
``history/scopes.py``: :mod:`.pyparse` (parsing),
:mod:`.syntax` (an anchor read by syntax), :mod:`.anchors` (scopes, windows and their gaps, and
a text parsed once: :func:`~.anchors.parsed`), :mod:`.gaptext` (the patch's own texts
re-indented and counted), :mod:`.places` (the places that fit, ranked), :mod:`.candidate` (the
best place of a conflict, for markers), :mod:`.explain` (why an anchor leads nowhere) and
:mod:`.scopes` (the scope table of a text, and a scope followed to where it went).

The entry point is imported on first use: :mod:`.pyparse` alone is what most commands need,
and the rest costs ~10 ms to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from patchctl.patchsets.placement.places import Params, Site
    from patchctl.patchsets.placement.where import Placement, locate

__all__ = ["Params", "Placement", "Site", "locate"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from patchctl.patchsets.placement import where

        return getattr(where, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
