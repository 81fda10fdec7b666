"""gRPC plumbing shared by every server and client: unix sockets, status mapping, interceptors (and
the token bucket of the rate-limiting one)."""
