"""Kubernetes-shaped API objects as frozen dataclasses, with validation that names field paths."""
