"""gRPC plumbing shared by every server and client: unix sockets, status mapping, interceptors."""
