"""Typed schemas of the API's kinds: the one description behind OpenAPI, strict field
validation, pruning, strategic merge patch and server-side apply (see model.py)."""
