"""Where in the original run a divergence points: the OpenWOP document it differs from.

The source session is exported once as OpenWOP run events (one run per turn); a divergence at a
model call is located in its turn's run: a tool-call divergence at the first `agent.toolCalled`
after that call's `node.completed` (or the node itself when the original called nothing there), a
text or JSON divergence at the run's last `node.completed`, an error at the last `node.failed`, a
refusal at the original's `envelope.refusal` (or its answer when the replay is the one that refused).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from metis_core.replay.compare import Divergence

if TYPE_CHECKING:
    from metis_core.agent.runtime import Runtime


class OriginalRunIndex:
    """The source session's OpenWOP documents, grouped by run (= turn id)."""

    def __init__(self, documents: list[dict[str, Any]]) -> None:
        self.runs: dict[str, list[dict[str, Any]]] = {}
        for document in documents:
            self.runs.setdefault(str(document["runId"]), []).append(document)

    @classmethod
    def of_session(cls, rt: Runtime, session_id: str) -> OriginalRunIndex:
        from metis_core.export import load_recording, openwop_documents

        documents, _ = openwop_documents(load_recording(session_id, rt.store, rt.trace))
        return cls(documents)

    def locate(self, turn_id: str | None, divergence: Divergence) -> dict[str, Any] | None:
        """The original document the divergence is at, or None when the run is not in the trace."""
        run = self.runs.get(turn_id or "")
        if not run:
            return None
        node_id = f"llm-call-{divergence.step + 1}"
        if divergence.point == "tool_call":
            node = _last(run, "node.completed", node_id)
            if node is not None:
                after = [d for d in run[node["sequence"] + 1 :] if d["type"] == "agent.toolCalled"]
                return after[0] if after and divergence.kind != "extra" else node
        elif divergence.point == "error":
            failed = _last(run, "node.failed")
            if failed is not None:
                return failed
        elif divergence.point == "refusal":
            refused = _last(run, "envelope.refusal")
            if refused is not None:
                return refused
        found = _last(run, "node.completed")
        return found if found is not None else run[-1]


def _last(run: list[dict[str, Any]], run_type: str, node_id: str | None = None) -> dict[str, Any] | None:
    matches = [d for d in run if d["type"] == run_type and (node_id is None or d.get("nodeId") == node_id)]
    return matches[-1] if matches else None
