"""Inbound wire shapes of the gateway: one module per API a client may speak."""
