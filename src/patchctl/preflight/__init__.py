"""``patchctl verify --env``: a fast environment preflight with a verdict and a fix per check.

:func:`run` takes a :class:`Context` (see :func:`context.build`) and returns an
:class:`EnvReport`; the checks are in :data:`registry.CHECKS`.
"""

from __future__ import annotations

from patchctl.preflight.context import build
from patchctl.preflight.engine import run
from patchctl.preflight.model import CheckResult, Context, EnvReport, Status, Verdict

__all__ = ["CheckResult", "Context", "EnvReport", "Status", "Verdict", "build", "run"]
