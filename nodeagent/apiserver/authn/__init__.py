"""Authentication of API requests: who sent a request (k8s.io/apiserver/pkg/authentication).

The seam between authentication and authorization is `UserInfo` (user.py): an authenticator turns a
request's credentials into one, the authorizers (nodeagent.apiserver.authz) decide on it alone.
"""
