"""nodeagent's fake DRA driver: a real DRA kubelet plugin serving profile-defined GPUs, built on dra_kit."""
