"""Edits carried along upstream's history (``--repo`` on apply, matrix and drift; issue 38 req 4).

- :mod:`~.upstream`: blobs, the commits touching a file, renames, merges; cached per commit;
- :mod:`~.walk`: one edit carried from its base commit to the target's, in steps; which def
  or class the edit sits in, and where it went when a commit moved it, are placement's answers
  (:mod:`patchctl.patchsets.placement.scopes`), the same scope finder apply's patches use;
- :mod:`~.disk`: walks kept on disk, per commit and starting texts, checked when read;
- :mod:`~.carry`: the planner's results, with the patches it could not place carried.
"""
