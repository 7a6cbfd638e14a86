"""Delegation: the `delegate` tool hands a sub-task to a worker session on a tier's model."""
