"""`metis replay`: a stored session's user turns re-run on another model, compared turn by turn.

Sits above the agent (it runs turns through a Runtime) and below the CLI; nothing below imports
it. source.py reads the original, recorded_tools.py serves its tool results, compare.py finds
where a replayed turn first differs, session_replay.py runs one session, batch.py many.
"""
