"""The topology manager: merges the resource managers' NUMA hints and admits pods under its policy.

Its port (TopologyHint, HintProvider, HintMemo) is nodeagent/pods/hints.py, not here: the device
manager gives hints too and may not import nodeagent.cm (see that module's docstring).
"""
