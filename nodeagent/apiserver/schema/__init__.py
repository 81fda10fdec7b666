"""Typed schemas of the API's kinds: the one description behind OpenAPI, strict field
validation, pruning, strategic merge patch and server-side apply (see model.py).

The built-in kinds' schemas are written by hand (builtin/, one definition per upstream type,
named as upstream names it, each written once: builtin/__init__.py refuses a second copy), not generated.
Chosen over generating them from one machine-readable source because:
- the only complete machine-readable source is upstream's own (its OpenAPI documents and
  generated.proto), which lives in the Go module cache, not in the project; a daemon cannot
  depend on it, and a vendored copy would still need nodeagent's deliberate differences laid
  over it (alpha-gated fields not served, legacy volume sources kept as written, v1alpha3's
  classic DRA kinds, which upstream no longer has);
- a source written by the project (YAML or JSON) would hold the same hand-written content without
  types or the comments that give each difference its reason, plus a generator to maintain,
  where builtin/dsl.py already is a one-line-per-field source;
- the schema and the protobuf tables (nodeagent.protowire) describe different facts (validation,
  list semantics, descriptions vs field numbers and Go presence); one notation for both would be
  a rewrite of ~1,900 lines with every behaviour at risk, for the guarantee tests give as well.
Drift is what the choice must prevent, and tests do: tests/unit/apiserver/test_schema_drift.py
compares every definition's fields with upstream's v1.37.2 OpenAPI (less the alpha-gated fields,
each listed with its gate) and walks every protobuf-decoded kind and the Pods API's Pod through
schema and protobuf table together, field for field; tests/unit/protowire checks the tables
against upstream's generated.proto and Go types. A field added to one side only fails the suite.
"""
