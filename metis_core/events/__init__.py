"""The event bus and its closed catalog (event-bus-and-trace-catalog.md).

`envelope` defines the Event shape, `catalog` the closed set of types and `make_event`, `bus` the
in-process pub/sub that fans events out to subscribers. This package imports nothing from the
agent loop, the store or the adapters; they import it.
"""
