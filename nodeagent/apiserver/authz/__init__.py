"""Authorization of API requests, as kube-apiserver's Node and RBAC authorizers decide it
(k8s.io/apiserver/pkg/authorization, plugin/pkg/auth/authorizer), and the RBAC bootstrap policy.

Pure: the authorizers take a request's attributes and its sender's `UserInfo`
(nodeagent.apiserver.authn.user) and answer (decision, reason); they read objects through a
reader they are given, never through HTTP (no aiohttp import: an import-linter contract).
"""
