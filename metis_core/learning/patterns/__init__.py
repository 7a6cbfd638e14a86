"""The pattern store: turn fingerprints, outcomes, the recorder at session end and the routing advisor."""
