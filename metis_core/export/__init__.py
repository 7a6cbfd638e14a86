"""Interoperability exports of a recorded session: OTel GenAI traces and metrics (OTLP/JSON), OpenWOP run events, and
the agent event log v0.2 (hash-chained JSON Lines). See docs/interop.md for the mappings.

Each `export_*` reads one session from the stores and writes to a path or stream; the builders
(`otel_trace_request`, `openwop_documents`, `event_log_entries`) return the documents instead.
Nothing else in metis_core imports this package (only the CLI does).
"""

from collections.abc import Callable

from metis_core.export.event_log_chain import ChainBreak, EventLogVerification, verify_event_log
from metis_core.export.event_log_v02 import event_log_entries, export_event_log
from metis_core.export.openwop import export_openwop, openwop_documents
from metis_core.export.options import ExportOptions
from metis_core.export.otel_genai import export_otel, otel_trace_request
from metis_core.export.otel_metrics import export_otel_metrics, otel_metrics_request
from metis_core.export.output import ExportTarget
from metis_core.export.session_recording import SessionRecording, load_recording
from metis_core.export.summary import ExportSummary
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore

Exporter = Callable[[str, SessionStore, TraceStore, ExportTarget, ExportOptions | None], ExportSummary]

EXPORT_FORMATS: dict[str, Exporter] = {
    "otel": export_otel,
    "otel-metrics": export_otel_metrics,
    "openwop": export_openwop,
    "eventlog": export_event_log,
}
"""`metis trace export --format <key>` -> the function that writes that format."""

__all__ = [
    "EXPORT_FORMATS",
    "ChainBreak",
    "EventLogVerification",
    "ExportOptions",
    "ExportSummary",
    "ExportTarget",
    "Exporter",
    "SessionRecording",
    "event_log_entries",
    "export_event_log",
    "export_openwop",
    "export_otel",
    "export_otel_metrics",
    "load_recording",
    "openwop_documents",
    "otel_metrics_request",
    "otel_trace_request",
    "verify_event_log",
]
