"""Where an edit goes in a Python file, and why: the one home of placement (issue 38 requirement 9).

Finding a structural patch's place used to be spread over six modules of ``kinds/``; they live
here now: :mod:`.pyparse` (parsing), :mod:`.syntax` (an anchor read by syntax), :mod:`.anchors`
(scopes, windows and their gaps), :mod:`.gaptext` (the patch's own texts re-indented and
counted), :mod:`.places` (the places that fit, ranked) and :mod:`.candidate` (the best place of
a conflict, for markers).
"""
