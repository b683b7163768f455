"""The one remote layer that ``migrate`` and ``validate`` share.

- :mod:`~patchctl.remote.ssh`: the ssh options, argv and the per-host master connections
  (which die with patchctl: see :mod:`patchctl.proc`; their control folder is swept by the next
  run: see :mod:`patchctl.orphans`);
- :mod:`~patchctl.remote.rsync`: rsync's exit codes as causes, and the wrapper that makes the
  host's rsync hold the root's transfer lock for as long as it runs;
- :mod:`~patchctl.remote.lock`: the per-root lock a migrate holds on each host for its whole run;
- :mod:`~patchctl.remote.hosts`: how results name the hosts.
"""
