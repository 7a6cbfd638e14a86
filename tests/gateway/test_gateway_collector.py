"""A gateway worker's garbage-collector policy: start-up's objects frozen, young generations collected less often."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from metis_core.gateway.serve import GC_THRESHOLDS, tune_collector


@pytest.fixture
def restored_collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


@pytest.mark.usefixtures("restored_collector")
def test_tuning_freezes_what_exists_and_raises_the_young_thresholds() -> None:
    kept = [[index] for index in range(1000)]  # long-lived containers, as start-up builds
    tune_collector()
    assert gc.get_threshold() == GC_THRESHOLDS
    assert GC_THRESHOLDS[0] > 700 and GC_THRESHOLDS[1] > 10  # less often than CPython's default
    assert gc.get_freeze_count() >= len(kept)
    seen = {id(item) for item in gc.get_objects()}  # every generation the collector walks; frozen ones are not in it
    assert not any(id(item) in seen for item in kept)


@pytest.mark.usefixtures("restored_collector")
def test_cyclic_garbage_made_after_tuning_is_still_collected() -> None:
    tune_collector()

    class Node:
        partner: object = None

    first, second = Node(), Node()
    first.partner, second.partner = second, first
    del first, second
    assert gc.collect() >= 2
