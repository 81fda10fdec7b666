"""Faults on demand from the kubelet's side: rules (model, rules), the call record (record), the
interceptors that apply them (interceptors), the config timeline (timeline), the simulated kubelet
restart (restart) and the admin API's Faults service (service, client)."""
