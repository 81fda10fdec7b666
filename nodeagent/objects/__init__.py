"""Kubernetes-shaped API objects as frozen dataclasses, with validation that names field paths.

- pod/: the Pod (model, manifest parsing, output, status checks).
- resource/: the resource.k8s.io kinds' admission and views (plus Node and PodSchedulingContext).
- common.py: the field-level checks both use (typed accessors naming the field path, the name rules,
  `Too many`); below pod/ and resource/, so neither imports the other's package for them.
- core.py: the store hooks of the other core/v1 kinds (ResourceQuota, Event).
- kinds.py: the store with every hook; yaml_budget.py: bounds on a YAML document before it is built.
"""
