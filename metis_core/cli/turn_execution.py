"""Running one turn from the command line: `@model` overrides, Ctrl-C, attachments, refusals.

The turn runs as an asyncio task; SIGINT cancels that task (the loop keeps the partial message
as CANCELLED and emits turn.cancelled) instead of killing the process, and the handler is
removed as soon as the turn ends, so Ctrl-C at a prompt behaves normally again.
"""

from __future__ import annotations

import asyncio
import base64
import mimetypes
import re
import signal
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from metis_core.adapters.base import AdapterOptions
from metis_core.agent.runtime import Runtime
from metis_core.agent.session import Session
from metis_core.agent.turn import StreamSink, TurnResult
from metis_core.cli.exit_codes import UsageProblem
from metis_core.cli.failures import clarify
from metis_core.errors import CapabilityMismatchError, MetisError
from metis_core.messages import ContentBlock, ImageBlock, ImageSource, Message, Role, TextBlock

T = TypeVar("T")
OVERRIDE = re.compile(r"^@(\S+)(?:\s+|$)")
IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}


def split_override(text: str) -> tuple[str | None, str]:
    """`@gpt-4o explain this` -> ("gpt-4o", "explain this"); text without a leading @ is unchanged."""
    match = OVERRIDE.match(text.strip())
    if match is None:
        return None, text
    rest = text.strip()[match.end() :].strip()
    if not rest:
        raise UsageProblem(f"nothing to send after @{match.group(1)}; write `@{match.group(1)} your message`")
    return match.group(1), rest


def image_attachment(path: Path, workspace: Path) -> ImageBlock:
    """An image block for `path`: a workspace reference when inside it, inline base64 otherwise."""
    media_type = mimetypes.guess_type(path.name)[0]
    if media_type not in IMAGE_TYPES:
        raise UsageProblem(f"{path} is not a PNG, JPEG, GIF or WebP image; only images can be attached")
    if not path.is_file():
        raise UsageProblem(f"no file at {path}")
    resolved, root = path.resolve(), workspace.resolve()
    if resolved.is_relative_to(root):
        source = ImageSource(kind="file_ref", data=str(resolved.relative_to(root)))
    else:
        source = ImageSource(kind="base64", data=base64.b64encode(resolved.read_bytes()).decode())
    return ImageBlock(source=source, media_type=media_type)


def check_images_allowed(runtime: Runtime, session: Session, spec: str | None) -> None:
    """Refuse attachments before a session sees them when no model of `spec` (or the session's) reads
    images, naming the config.yaml setting that says a model does (exit 5, CapabilityMismatchError)."""
    spec = spec or session.sticky_model or runtime.config.default_model
    if not spec:
        return
    try:
        models = session.engine.expand(spec)
        if any(runtime.registry.capabilities(m).supports_images for m in models):
            return
    except MetisError:
        return  # an unknown name is refused, with its own message, when the turn resolves it
    model = models[0]
    raise CapabilityMismatchError(model, "supports_images", (
        f"{model} is not known to read images; if it does, say so in {runtime.config.path}: "
        f"`models: {{\"{model}\": {{supports_images: true}}}}` (docs/model-registry.md), or attach to another "
        "model with --model"))


async def interruptible(work: Coroutine[Any, Any, T]) -> T | None:
    """Await `work` as a task that SIGINT cancels; None if it was cancelled before it could answer."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(work)
    try:
        loop.add_signal_handler(signal.SIGINT, task.cancel)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
        installed = False
    try:
        return await task
    except asyncio.CancelledError:
        if task.cancelled():
            return None
        raise
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)


def execute_turn(
    runner: asyncio.Runner,
    runtime: Runtime,
    session: Session,
    text: str,
    *,
    attachments: list[ContentBlock] | None = None,
    on_stream: StreamSink | None = None,
    options: AdapterOptions | None = None,
) -> tuple[TurnResult | None, str | None]:
    """(result, override) for one user message; result None when Ctrl-C came before the turn began.

    An unknown `@model` is refused before anything is sent; routing refusals that come down to a
    missing key are raised as MissingAPIKeyError.
    """
    override, body = split_override(text)
    if override is not None:
        session.engine.expand(override)  # UnknownModelError names close matches
    if not any(m.role is Role.USER for m in session.history) and runtime.store.get_session(session.id).title is None:
        runtime.store.update_session(session.id, title=" ".join(body.split())[:80])
    work = runtime.turns.run(session, body, attachments=attachments, override=override, on_stream=on_stream,
                             options=options)
    try:
        result = runner.run(interruptible(work))
    except MetisError as error:
        raise clarify(error, runtime.config) from None
    return result, override


def add_system_prompt(runtime: Runtime, session: Session, system: str) -> None:
    """Store `system` as the conversation's system prompt, unless it already is the latest one."""
    current = next((m for m in reversed(session.history) if m.role is Role.SYSTEM), None)
    if current is not None and current.text() == system:
        return
    session.append(Message(role=Role.SYSTEM, session_id=session.id, content=[TextBlock(text=system)]), runtime.store)
