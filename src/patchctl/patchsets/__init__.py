"""Patchsets: the model, the manifest loader, the patch kinds and the engine that applies them."""
