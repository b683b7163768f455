"""patchctl: carry tagged local modifications of verl across releases and clusters."""

from __future__ import annotations

__version__ = "0.1.0"
