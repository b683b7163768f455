"""``patchctl validate CLUSTER``: prove a migrated tree on the cluster itself.

Steps, each a small function with a frozen result (see ``model.py``): ``plan`` (pure; what
--dry-run prints), ``preflight`` (ship patchctl's package, run the host preflight everywhere),
``rayup`` (head, workers, wait on Ray's node table, GPU identity), ``launch`` (the profile's run
on the head, streamed), ``teardown`` (only this run's processes), ``fetch`` (log and report
home), ``compare``. ``run.validate`` chains them; the host side is ``validate.host``.
"""
