"""The shared half of the line-based kinds (``guard-import``, ``keyword-value``).

Such a kind is two pure functions of a file's text: ``_forward`` makes every change it should
(and says where, and what it could not do), ``_backward`` undoes every tagged change it finds.
``check``, ``apply`` and ``revert`` follow from the pair the same way for every such kind: a
change is *present* when undoing it and doing it again gives back the text byte for byte, and
*modified* when the tagged lines are there but do not survive that round trip. Each kind words
its own messages through the ``_say_*`` methods.
"""

from __future__ import annotations

from typing import Any, ClassVar

from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus
from patchctl.patchsets.model import Patch, Presence


class LineRewrite:
    creates_target: ClassVar[bool] = False

    # -- what a kind provides ----------------------------------------------------------------

    def _forward(self, text: str, patch: Patch, path: str) -> tuple[str, list[int], list[str]]:
        """(the changed text, 1-based lines changed, problems that forbid the change)."""
        raise NotImplementedError

    def _backward(self, text: str, patch: Patch) -> tuple[str, list[int]]:
        """(the text with every tagged change undone, the 1-based lines those changes held)."""
        raise NotImplementedError

    def _broken(self, new: str, path: str) -> str | None:
        """Why the changed text must not be written, if it must not (default: nothing)."""
        return None

    def _say_absent(self, p: Any, path: str) -> str:
        raise NotImplementedError

    def _say_present(self, p: Any, owned: list[int]) -> str:
        raise NotImplementedError

    def _say_differs(self, p: Any, path: str) -> str:
        raise NotImplementedError

    def _say_edited(self, p: Any, path: str) -> str:
        raise NotImplementedError

    def _say_nothing(self, p: Any, path: str) -> str:
        raise NotImplementedError

    def _say_done(self, p: Any, changed: list[int]) -> str:
        raise NotImplementedError

    def _say_restored(self, p: Any, owned: list[int]) -> str:
        raise NotImplementedError

    # -- the three operations ----------------------------------------------------------------

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        if text is None:
            return Check(Presence.MISSING, f"{ctx.path} does not exist")
        orig, owned = self._backward(text, patch)
        if not owned:
            return Check(Presence.MISSING, self._say_absent(patch.params, ctx.path))
        if self._forward(orig, patch, ctx.path)[0] != text:
            return Check(Presence.MODIFIED, self._say_differs(patch.params, ctx.path), frozenset(owned))
        return Check(Presence.PRESENT, self._say_present(patch.params, owned), frozenset(owned))

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        new, changed, problems = self._forward(text, patch, ctx.path)
        if problems:
            return Edit(EditStatus.CONFLICT, f"{ctx.path}: {problems[0]}")
        if not changed:
            return Edit(EditStatus.NOT_APPLICABLE, self._say_nothing(patch.params, ctx.path))
        broken = self._broken(new, ctx.path)
        if broken:
            return Edit(EditStatus.CONFLICT, broken)
        return Edit(EditStatus.CHANGED, self._say_done(patch.params, changed), new)

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        orig, owned = self._backward(text, patch)
        if not owned:
            return Edit(EditStatus.NOT_APPLICABLE, f"{self._say_absent(patch.params, ctx.path)} to revert")
        if self._forward(orig, patch, ctx.path)[0] != text:
            return Edit(EditStatus.CONFLICT, self._say_edited(patch.params, ctx.path))
        return Edit(EditStatus.CHANGED, self._say_restored(patch.params, owned), orig)
