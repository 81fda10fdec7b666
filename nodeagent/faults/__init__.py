"""Faults on demand from the kubelet's side: rules (model, rules), the call record (record), the
interceptors that apply them (interceptors), playing the config timeline (timeline), the simulated kubelet
restart (restart) and the admin API's Faults service (service). The config timeline is parsed by
nodeagent.config.faults (with model.parse_rule, the one module of this package config/ may import);
the CLI's side (commands and client) is in nodeagent.admin, which sits above this package."""
