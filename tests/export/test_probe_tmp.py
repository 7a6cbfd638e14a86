from export.conftest import RecordedSession
def test_probe(recorded):
    for e in recorded.events:
        print(e.id, e.timestamp, e.turn_id and e.turn_id[-6:], e.type, (e.parent_event_id or '')[-6:], e.payload)
    for m in recorded.messages:
        print(m.id, m.role, m.status, [b.type for b in m.content], m.metadata.model, m.metadata.stop_reason, m.metadata.provider_raw, m.metadata.usage)
    assert 0
