"""The fleet capacity benchmark's search, verdicts and fake broker fleet (against a real server)."""

import json
import time

import pytest

from bench.scenarios.fleet import Step, judge, ladder
from bench.lib.brokers import BandLayout, BrokerFleet, OwnTopicsLayout
from bench.lib.brokers.layouts import band_cluster, band_topics
from bench.lib.loadgen import LoadResult
from bench.lib.scales import FleetSpec
from bench.lib.servers import ONE_PROCESS, NamesrvServer
from bench.lib.wire import route_request
from namesrv.client import BlockingRemotingClient
from namesrv.protocol.codes import RequestCode
from namesrv.protocol.command import make_request


def _recording(limit):
    tried = []

    def passes(size):
        tried.append(size)
        return size <= limit
    return passes, tried


def test_ladder_doubles_up_to_the_first_failure_then_bisects():
    passes, tried = _recording(5000)
    assert ladder(passes, 1000, 64000, bisections=2) == 5000
    assert tried == [1000, 2000, 4000, 8000, 6000, 5000]


def test_ladder_halves_when_the_first_size_fails():
    passes, tried = _recording(320)
    assert ladder(passes, 1000, 64000, bisections=2) == 312
    assert tried == [1000, 500, 250, 374, 312]


def test_ladder_stops_at_the_cap_and_says_none_when_nothing_passes():
    passes, tried = _recording(10 ** 9)
    assert ladder(passes, 1000, 5000, bisections=2) == 5000
    assert tried == [1000, 2000, 4000, 5000]
    passes, tried = _recording(0)
    assert ladder(passes, 16, 64, bisections=2, halvings=10) is None
    assert tried == [16, 8, 4, 2]


def _step(p99_ms=1.0, rps=50_000, rtts=(0.01,), unanswered=0, errors=0, late=(0.0,)):
    latencies = [p99_ms / 1000.0] * 100
    route = LoadResult(requests=len(latencies), errors=0, unmatched=0, seconds=len(latencies) / rps,
                       latencies=latencies)
    beats = {"sent": len(rtts) + unanswered, "answered": len(rtts), "errors": errors, "unanswered": unanswered,
             "rtts": sorted(rtts), "late": sorted(late), "beat_bytes": 1}
    return Step(size=1000, real=100, period=3.0, route=route, beats=beats)


def test_judge_passes_a_step_within_every_limit_and_names_each_breach():
    spec = FleetSpec()
    assert judge(_step(), spec) == []
    assert judge(_step(p99_ms=6.0), spec) == ["route p99 6.00 ms"]
    assert judge(_step(rps=40_000), spec) == ["route reads 40000/s"]
    assert judge(_step(rtts=(2.0,)), spec) == ["beat rtt p99 2000 ms"]
    assert judge(_step(unanswered=3, errors=1), spec) == ["beats: 1 errors, 3 unanswered"]
    assert judge(_step(late=(0.5,)), spec) == ["fleet behind its schedule by 500 ms (p99)"]


BROKERS_PER_BAND = BandLayout.BROKERS_PER_BAND


def test_sampled_topics_come_from_every_registered_band():
    names = BandLayout(1000).sample_topics(3 * BROKERS_PER_BAND, 30)
    assert len(names) == 30
    for band in range(3):
        assert len(set(names) & set(band_topics(band, 1000))) == 10
    assert set(BandLayout(5).sample_topics(2, 100)) == set(band_topics(0, 5))


@pytest.fixture(scope="module")
def server():
    with NamesrvServer(properties=ONE_PROCESS) as started:
        yield started


def _cluster_info(port):
    client = BlockingRemotingClient("127.0.0.1", port)
    try:
        answer = client.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO))
        route = client.call(route_request(band_topics(0, 4)[0]))
    finally:
        client.close()
    assert answer.code == 0
    # plain fastjson: unquoted numeric keys in brokerAddrs; the cluster table has none
    clusters = json.loads(answer.body.split(b',"clusterAddrTable":')[1][:-1])
    return clusters, route


def _wait_for_clusters(port, count, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        clusters, route = _cluster_info(port)
        if len(clusters) == count or time.monotonic() > deadline:
            return clusters, route
        time.sleep(0.05)


@pytest.mark.parametrize("style", ["4.9", "5.x"])
def test_fleet_registers_in_bands_beats_and_shrinks(server, style):
    first_index = {"4.9": 1000, "5.x": 2000}[style]
    with BrokerFleet(server.port, BandLayout(4, first_index), style) as fleet:
        fleet.resize(2 * BROKERS_PER_BAND)
        clusters, route = _cluster_info(server.port)
        assert sorted(clusters) == [band_cluster(0), band_cluster(1)]
        assert all(len(names) == 4 for names in clusters.values())
        assert route.code == 0
        body = json.loads(route.body)
        assert len(body["queueDatas"]) == 4 and len(body["brokerDatas"]) == 4
        assert all(len(data["brokerAddrs"]) == 2 for data in body["brokerDatas"])
        fleet.prime()
        fleet.start_beating(period=0.2, seconds=0.5, grace=5.0)
        stats = fleet.beat_result()
        assert stats["sent"] >= 2 * BROKERS_PER_BAND
        assert stats["answered"] == stats["sent"] and stats["errors"] == 0 and stats["unanswered"] == 0
        assert len(stats["rtts"]) == stats["sent"]
        fleet.resize(BROKERS_PER_BAND)
        clusters, _ = _wait_for_clusters(server.port, 1)
        assert sorted(clusters) == [band_cluster(0)]
    clusters, route = _wait_for_clusters(server.port, 0)
    assert clusters == {} and route.code == 17


def test_a_bursting_fleet_beats_every_broker_each_period_until_told_to_stop(server):
    layout = OwnTopicsLayout(3, name="bench-test-burst-%d", topic_prefix="BenchTestBurst-%d", first_index=5000)
    with BrokerFleet(server.port, layout) as fleet:
        fleet.resize(3)
        fleet.start_beating(period=0.2, seconds=60.0, grace=5.0, burst=True)
        time.sleep(0.5)
        fleet.stop_beating()
        stats = fleet.beat_result()
    assert stats["seconds"] < 60.0                     # ended by the stop, not by its bound
    assert stats["sent"] % 3 == 0 and stats["rounds"] == stats["sent"] // 3 >= 1
    assert stats["answered"] == stats["sent"] and stats["errors"] == stats["unanswered"] == 0
