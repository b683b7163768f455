"""validate's host side: run on each cluster host as ``python -m patchctl.validate.host ACTION``.

Shipped with patchctl's own package into ``TREE/.patchctl/validate/pkg`` (by validate, over the
same ssh as migrate) and run with the cluster's ``python``: the interpreter verl is installed in.
It needs nothing beyond verl's own dependencies (Ray brings click and packaging; Python >= 3.11
or tomli, which pip vendors, for the profile TOML). One JSON request on stdin, JSON lines out.
"""
