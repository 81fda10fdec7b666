"""nodeagent's own admin API (nodeagent.v1.Admin) and the backend the CLI talks to, and the CLI's clients
of the admin socket (client.py; faults_client.py and faults_cli.py for nodeagent.v1.Faults, served by
nodeagent.faults.service on the same socket)."""
