"""A tiny app built on metis-core, used by the cassette plugin tests as a user's project would be."""

from metis_core.adapters.client import ModelClient
from metis_core.messages import Message, Role, TextBlock

MODEL = "anthropic:claude-sonnet-4-5"
PROMPT = "What's the weather in Paris?"


def ask(client: ModelClient, prompt: str = PROMPT) -> str:
    """Stream one answer and return its text."""
    events = list(client.stream([Message(role=Role.USER, content=[TextBlock(text=prompt)])], MODEL))
    final = events[-1]
    assert final.type == "message_complete"
    return final.message.text()
