"""Fixtures the controller's simulation tests share (test_raft_sim.py, test_raft_membership_sim.py)."""

import pytest

from tests.controller.raftsim import sim_groups


@pytest.fixture
def sim(tmp_path):
    """``sim(seed=..., ...)``: a SimGroup, closed at the end of the test (a fresh store per group)."""
    with sim_groups(tmp_path) as make:
        yield make
