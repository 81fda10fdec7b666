"""Pods on this node: manifest sources, admission, lifecycle and status."""
