"""Network links and namespaces: the model, the Netlink port, its pyroute2 adapter and a fake."""
