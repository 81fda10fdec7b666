"""nodeagent's fake device plugin: a real v1beta1 device plugin serving profile-defined devices."""
