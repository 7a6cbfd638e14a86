"""The stored message shape's version: what a call stamps on a Message and what the store compares rows
with, readable without loading the message models (listings, `metis cost`)."""

SCHEMA_VERSION = 2
"""The stored message shape's current version (`Message.schema_version`). v2 added provider_tool_call,
provider_tool_result, compaction and TextBlock.citations. A new version needs its step in migrations.py
(`MESSAGE_MIGRATIONS`), loaded only when an older stored message is read, never by a call."""
