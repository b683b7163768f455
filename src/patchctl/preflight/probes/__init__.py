"""Probe scripts. They are never imported: each file's text runs as ``python -c`` in a subprocess.

Each is self-contained (standard library plus the package it probes), reads one JSON argument
from ``sys.argv[1]`` and prints ``@@patchctl-probe@@ {json}`` as its last line.
"""
