"""nodeagent's own admin API (nodeagent.v1.Admin) and the backend the CLI talks to."""
