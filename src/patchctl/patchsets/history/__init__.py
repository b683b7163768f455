"""Edits carried along upstream's history (``--repo`` on apply, matrix and drift; issue 38 req 4).

- :mod:`~.upstream`: blobs, the commits touching a file, renames, merges; cached per commit;
- :mod:`~.scopes`: the functions and classes of a Python file, and the one an edit sits in;
- :mod:`~.walk`: one edit carried from its base commit to the target's, in steps;
- :mod:`~.disk`: walks kept on disk, per commit and starting texts, checked when read;
- :mod:`~.carry`: the planner's results, with the patches it could not place carried.
"""
