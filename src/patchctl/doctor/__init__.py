"""``patchctl doctor``: match a failed run's log against known failure signatures.

The signatures are data (``signatures.toml`` beside this file), loaded only through
:func:`signatures.load_signatures`; :func:`matcher.diagnose` returns a :class:`matcher.Diagnosis`, root cause first;
:func:`logfile.open_log` reads plain and compressed logs and refuses binary files.
"""

from __future__ import annotations

from patchctl.doctor.logfile import LogReader, NotALog, open_log
from patchctl.doctor.matcher import Diagnosis, Match, diagnose
from patchctl.doctor.signatures import Resolution, Signature, load_signatures
from patchctl.doctor.versions import verl_pins

__all__ = [
    "Diagnosis",
    "LogReader",
    "Match",
    "NotALog",
    "Resolution",
    "Signature",
    "diagnose",
    "load_signatures",
    "open_log",
    "verl_pins",
]
