"""Fixtures the controller's simulation tests share (test_raft_sim.py, test_raft_membership_sim.py)."""

import pytest

from tests.controller.raftsim import SimGroup


@pytest.fixture
def sim(tmp_path):
    """``sim(seed=..., ...)``: a SimGroup, closed at the end of the test (a fresh store per group)."""
    groups = []

    def make(**kwargs):
        store = tmp_path / ("g%d" % len(groups))
        store.mkdir()
        groups.append(SimGroup(store, **kwargs))
        return groups[-1]
    yield make
    for group in groups:
        group.close()
