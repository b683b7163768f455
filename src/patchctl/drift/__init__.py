"""What upstream changed under each patch, and which upstream commit did it.

- :mod:`~patchctl.drift.history`: commits, first-parent history and single files, read from git
  without a checkout;
- :mod:`~patchctl.drift.probe`: one patch's outcome at one commit, from the few files it reads;
- :mod:`~patchctl.drift.bisect`: the first commit where that outcome changes, in O(log n) probes;
- :mod:`~patchctl.drift.regions` and :mod:`~patchctl.drift.compare`: ``drift``, the upstream code
  under every patch between two trees;
- :mod:`~patchctl.drift.watch` and :mod:`~patchctl.drift.retire`: the scheduled check, and a
  patchset without the patches upstream absorbed.
"""
