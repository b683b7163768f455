"""``patchctl capture``: turn a fork's tagged edits into a patchset (the reverse of ``apply``).

:func:`patchctl.capture.run.capture` compares FORK with BASE file by file, turns each tagged
edit into a patch of the narrowest kind that reproduces it exactly, checks the result by
applying it to BASE, and writes the patchset directory only when that check holds.
"""
