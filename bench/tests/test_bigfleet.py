"""bench.scenarios.bigfleet at a tiny size, each scenario once: it runs, finds the server's processes and prints
well-formed figures (never what they say), against a server it starts and against one given by --target."""

import json
import os
import subprocess
import sys

import pytest

from tools import guestidle
from bench.lib import options, spysplit
from bench.lib.brokers import SpreadLayout
from bench.scenarios import bigfleet

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_layout_puts_every_topic_on_its_number_of_brokers():
    layout = SpreadLayout(brokers=10, topics=1000, brokers_per_topic=3)
    assert layout.per_broker == 300 and layout.step == 100
    hosts = {}
    for broker in range(10):
        for topic in layout.topics_of(broker):
            hosts.setdefault(topic, set()).add(broker)
    assert len(hosts) == 1000 and {len(b) for b in hosts.values()} == {3}
    assert layout.topics_of(1)[0] == "Fleet000100" and layout.broker_addr(258).startswith("127.")
    with pytest.raises(ValueError):
        SpreadLayout(brokers=10, topics=5, brokers_per_topic=1)


def run(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, "-m", "bench.scenarios.bigfleet", "--brokers", "6", "--topics", "60",
                           "--brokers-per-topic", "2", "--cycle", "1", "--seconds", "2", "--warmup", "0.5",
                           "--json", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("scenario", ["steady", "disconnect", "takeover"])
def test_each_scenario_prints_its_figures(scenario):
    figures = run("--scenario", scenario, "--server", "one" if scenario == "steady" else "default")
    assert figures["entries"] == 120 and figures["reads"] > 0
    assert figures["read_errors"] == 0 or scenario == "disconnect"     # the routes are gone after it
    assert figures["probe_reads"] > 0 and figures["probe_p99_ms"] > 0 and figures["rss_mib"] > 10
    assert figures["registrations"] > 0 and figures["registration_errors"] == 0
    assert figures["host_steal_share"] is None or 0.0 <= figures["host_steal_share"] <= 1.0
    assert figures["guest_halt_poll_ns"] == guestidle.read()["halt_poll_ns"]
    if scenario == "disconnect":
        assert figures["dropped_brokers_forgotten_s"] is not None
    if scenario == "takeover":
        assert figures["brokers_moved"] == 6


def test_a_server_given_by_address_is_measured_with_its_processes(tmp_path):
    from tests.integration.server import NamesrvProcess
    server = NamesrvProcess(tmp_path, {"routeReadWorkers": "1"})
    server.start()
    try:
        figures = run("--target", "127.0.0.1:%d" % server.port)
    finally:
        server.stop()
    assert figures["reads"] > 0 and figures["rss_mib"] > 10 and "server" not in figures


def test_acl_alternate_signs_the_reads_and_prints_both_ratios():
    summary = run("--acl", "alternate", "--rounds", "1")
    assert set(summary) >= {"ratio_of_medians", "cpu_per_read_ratio_of_medians", "reads_per_s_acl_on",
                            "server_cpu_us_per_read_acl_on"}
    assert summary["reads_per_s_acl_on"][0] > 0 and summary["server_cpu_us_per_read_acl_on"][0] > 0
def test_a_warm_up_measures_a_fresh_window_then_the_same_load_before_the_measured_one():
    figures = run("--server", "one", "--warm-up", "1")
    fresh = figures["fresh"]
    assert figures["warm_up_s"] == 1.0 and fresh["reads_per_s"] > 0 and fresh["probe_p99_ms"] > 0
    assert fresh["registration_p99_ms"] > 0 and "reads/s" in fresh["line"] and figures["reads"] > 0


def test_java_is_warmed_up_by_default_and_ours_is_not():
    assert bigfleet.JAVA_WARM_UP >= 30 and options.parse("bigfleet", "", bigfleet.OPTIONS, []).warm_up is None
    assert "fresh" not in run("--server", "one")


def test_the_cpu_per_read_of_each_server_process_and_where_its_time_went(tmp_path):
    figures = run("--server", "default", "--profile", str(tmp_path))
    assert set(figures["cpu_us_per_read"]) == {"main", "worker-0"}
    assert all(us >= 0 for us in figures["cpu_us_per_read"].values())
    if figures["profile"] is None:        # py-spy is not a dependency: without it, the rest is measured
        pytest.skip("py-spy is not installed")
    shares = figures["profile"]["worker-0"]
    assert shares and abs(sum(shares.values()) - 1.0) < 1e-6 and set(shares) <= {c for c, _ in (
        spysplit.LEAF_RULES + spysplit.STACK_RULES)} | {"other"}


def test_samples_are_sorted_by_the_first_rule_from_the_leaf_up(tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text(
        "main (x.py:1);EPollReactor.doPoll (twisted/internet/epollreactor.py:227) 6\n"
        "main (x.py:1);WorkerConnection.dataReceived (namesrv/readworkers/worker/connections.py:80);"
        "write (namesrv/protocol/writethrough.py:29) 3\n"
        "main (x.py:1);Shapes.answer (namesrv/protocol/answershapes.py:107);"
        "RouteQueries._joined_route_body (namesrv/routes/queries.py:111) 1\n")
    assert spysplit.split(str(raw)) == {"syscall: epoll_wait (idle included)": 0.6, "syscall: send": 0.3,
                                        "route lookup (joining a body)": 0.1}
