"""Routing: which model answers a turn (policy chain, rules), health tracking and fallback chains."""
