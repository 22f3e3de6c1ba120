"""Hostile peers against a real `twistd namesrv`: the server keeps answering a good client throughout.

Small versions of the tools/hostile_peers.py scenarios. The good client is a separate
process asking for a route every 10 ms (tools.latency.LatencyProbe); each test asserts it
got no error and kept being answered, and that the tables are consistent afterwards.
"""

from tools import checks, peers
from tools.latency import LatencyProbe

HOST = "127.0.0.1"


def under_attack(server, attack):
    """Run ``attack()`` with the control broker registered and a probing good client; returns
    (attack figures, probe stats)."""
    with checks.ControlBroker(HOST, server.port, keepalive=0.5):
        checker = checks.TableChecker(HOST, server.port)
        checker.record_expected()
        with LatencyProbe(HOST, server.port) as probe:
            figures = attack()
        assert checker.check() == []
    assert server.process.poll() is None
    return figures, probe.stats


def test_slowloris_peers_do_not_slow_the_others(start_server):
    server = start_server()
    figures, stats = under_attack(server, lambda: peers.slowloris(HOST, server.port, count=200, duration=3.0,
                                                                  interval=0.5))
    assert figures["refused_at_connect"] == 0 and figures["bytes_per_peer"] >= 6
    assert stats["errors"] == 0 and stats["requests"] > 50, stats


def test_half_open_connections_are_closed_after_the_idle_timeout(start_server):
    server = start_server({"serverChannelMaxIdleTimeSeconds": "1"})
    figures, stats = under_attack(server, lambda: peers.half_open(HOST, server.port, count=200, hold=8.0))
    assert figures["closed_by_server"] == 200, figures
    assert stats["errors"] == 0 and stats["requests"] > 50, stats


def test_connection_storm_leaves_the_server_answering(start_server):
    server = start_server()
    figures, stats = under_attack(server, lambda: peers.connection_storm(HOST, server.port, concurrent=1000,
                                                                         rounds=2, max_seconds=30))
    assert figures["connect_failures"] == 0 and figures["connections_opened"] == 2000, figures
    assert stats["errors"] == 0, stats


def test_broker_cut_mid_body_changes_nothing_but_its_own_routes(start_server):
    server = start_server()
    figures, stats = under_attack(server, lambda: peers.register_then_cut(HOST, server.port, topics=10000,
                                                                          rounds=1))
    assert figures["registered"] == 1 and figures["broker_gone_after_cut"] == 1, figures
    assert stats["errors"] == 0, stats
