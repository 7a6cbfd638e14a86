"""Context compaction: keep every request inside its model's window without losing stored messages.

view.py builds what a request carries from the stored history; compactor.py decides when to trim
and when to summarise, makes the summarising call and records it; transcript.py writes older turns
as text for the summariser. docs/context.md describes the behaviour and its settings.
"""
