"""A module the stand-in trainer's Ray task imports on every node: a code patch applied here must
be seen running in those Ray workers by patchctl's code hook (``patched-code-ran``)."""

import os

MARK = os.path.basename(__file__)
