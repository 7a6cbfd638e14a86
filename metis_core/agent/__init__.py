"""The agent loop: sessions, turns, routing for a turn, tool dispatch. Runs without a terminal."""
