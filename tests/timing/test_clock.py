"""Clock jumps: broker expiry must follow a monotonic clock, never the wall clock.

An end-to-end test would need faketime (or root and a clock change) to move the server's
wall clock; instead these unit tests prove that (1) the liveness path reads only the
injected clock, even while the wall clock jumps a century forwards or backwards, and
(2) the running service injects a MonotonicClock, which reads ``time.monotonic``.
"""

import time

import pytest
from twisted.internet import task

from namesrv.timing.clock import MonotonicClock
from namesrv.routes import DataVersion, RouteInfoManager, TopicConfig, TopicConfigSerializeWrapper


def wrapper(*topics, counter=1):
    return TopicConfigSerializeWrapper(DataVersion(1700000000000, counter),
                                       {t: TopicConfig(t, 4, 4) for t in topics})


@pytest.fixture
def wall_clock_forbidden(monkeypatch):
    """Any read of the wall clock on the tested path fails the test."""
    def forbidden():
        raise AssertionError("the wall clock was read on the liveness path")
    monkeypatch.setattr(time, "time", forbidden)
    monkeypatch.setattr(time, "time_ns", forbidden)


def test_expiry_follows_the_injected_clock_only(wall_clock_forbidden):
    clock = task.Clock()
    routes = RouteInfoManager(clock=clock)
    routes.register_broker("C", "127.0.0.1:10911", "broker-a", 0, "127.0.0.1:10912", wrapper("T1", "T2"), [])
    routes.register_broker("C", "127.0.0.1:10921", "broker-b", 0, "127.0.0.1:10922", wrapper("T3", "T4"), [])
    clock.advance(100)
    assert routes.broker_heartbeat("C", "127.0.0.1:10921")
    clock.advance(19)
    assert routes.scan_not_active_brokers() == []
    clock.advance(2)
    [expired] = routes.scan_not_active_brokers()
    assert expired.broker_name == "broker-a" and expired.age_ms == 121000
    clock.advance(100)
    [expired] = routes.scan_not_active_brokers()
    assert expired.broker_name == "broker-b"


def test_wall_clock_jumps_neither_expire_nor_keep_brokers(monkeypatch):
    clock = task.Clock()
    routes = RouteInfoManager(clock=clock)
    routes.register_broker("C", "127.0.0.1:10911", "broker-a", 0, "127.0.0.1:10912", wrapper("T1", "T2"), [])
    monkeypatch.setattr(time, "time", lambda: time.monotonic() + 100 * 365 * 86400.0)
    clock.advance(60)
    assert routes.scan_not_active_brokers() == [], "a forward wall-clock jump expired a live broker"
    monkeypatch.setattr(time, "time", lambda: 0.0)
    clock.advance(61)
    assert len(routes.scan_not_active_brokers()) == 1, "a backward wall-clock jump kept a dead broker"


def test_monotonic_clock_reads_time_monotonic(monkeypatch):
    monkeypatch.setattr(time, "time", lambda: 0.0)
    monkeypatch.setattr(time, "monotonic", lambda: 1234.5)
    assert MonotonicClock().seconds() == 1234.5


def test_route_tables_default_to_a_monotonic_clock():
    assert isinstance(RouteInfoManager().clock, MonotonicClock)


def test_the_service_gives_the_route_tables_a_monotonic_clock(tmp_path):
    config_module = pytest.importorskip("namesrv.config")
    from namesrv.service import make_service

    config = config_module.NamesrvConfig()
    config.update({"kvConfigPath": str(tmp_path / "kv.json"), "listenPort": "0", "bindAddress": "127.0.0.1",
                   "routeSnapshotPath": str(tmp_path / "routes.snapshot")}, source="test")
    service = make_service(config, reactor=task.Clock())
    assert isinstance(service.routes.clock, MonotonicClock)
