"""``patchctl matrix``: one patchset applied to many upstream versions, each in a scratch copy.

``sources`` turns ``--versions`` into releases and git refs and unpacks each one, pristine,
into a scratch directory; ``runner`` applies the patchsets there in parallel and returns a
:class:`~patchctl.matrix.run.Matrix` of outcomes.
"""
