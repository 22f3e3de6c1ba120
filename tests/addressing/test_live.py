"""Two real `twistd namesrv` processes on 127.0.0.1: one serves the address list of both, the other is killed
and started again. What a Java client fetching the list would see, over HTTP."""

import signal
import time
import urllib.error
import urllib.request

import pytest

from tests.integration.server import NamesrvProcess, free_port

FAST = {"addressServiceProbeIntervalMillis": "200", "addressServiceDownAfterMillis": "1000",
        "addressServiceProbeTimeoutMillis": "500"}


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def served_until(url, wanted, within=30.0):
    """The list ``url`` serves, asked until it is ``wanted`` (or ``within`` seconds passed: then the last one)."""
    deadline = time.monotonic() + within
    while True:
        body = fetch(url)[1].strip()
        if body == wanted or time.monotonic() > deadline:
            return body
        time.sleep(0.1)


@pytest.fixture
def pair(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    http, a_port, b_port = free_port(), free_port(), free_port()
    b = NamesrvProcess(tmp_path / "b", {"routeReadWorkers": "0"}, port=b_port)
    a = NamesrvProcess(tmp_path / "a", dict(FAST, prometheusListenPort=str(http), routeReadWorkers="0",
                                            addressServiceNamesrvAddr="127.0.0.1:%d;127.0.0.1:%d" % (a_port, b_port)),
                       port=a_port)
    started = [b.start(), a.start()]
    yield a, b, "http://127.0.0.1:%d/rocketmq/nsaddr" % http
    for server in started:
        server.stop()


def test_a_killed_name_server_leaves_the_served_list_and_comes_back_when_it_answers(pair, tmp_path):
    a, b, url = pair
    both = "127.0.0.1:%d;127.0.0.1:%d" % (a.port, b.port)
    assert served_until(url, both) == both
    b.stop(signal.SIGKILL)
    assert served_until(url, "127.0.0.1:%d" % a.port) == "127.0.0.1:%d" % a.port
    revived = NamesrvProcess(tmp_path / "b", {"routeReadWorkers": "0"}, port=b.port).start()
    try:
        assert served_until(url, both) == both
    finally:
        revived.stop()
    log = a.log()
    assert "name server 127.0.0.1:%d left the address list" % b.port in log
    assert "name server 127.0.0.1:%d is back in the address list" % b.port in log
    metrics = fetch(url.replace("/rocketmq/nsaddr", "/metrics"))[1]
    for change in ("removed", "restored"):
        assert ('rocketmq_namesrv_address_service_changes_total{change="%s",namesrv="127.0.0.1:%d"} 1.0'
                % (change, b.port)) in metrics


def test_a_stopped_but_listening_name_server_leaves_too(pair):
    """SIGSTOP: the port still accepts (the kernel's queue) but nothing answers; the probe's timeout decides."""
    a, b, url = pair
    both = "127.0.0.1:%d;127.0.0.1:%d" % (a.port, b.port)
    assert served_until(url, both) == both
    b.process.send_signal(signal.SIGSTOP)
    try:
        assert served_until(url, "127.0.0.1:%d" % a.port) == "127.0.0.1:%d" % a.port
    finally:
        b.process.send_signal(signal.SIGCONT)
    assert served_until(url, both) == both


def test_when_every_listed_name_server_is_down_the_whole_list_is_served(tmp_path):
    http, x, y = free_port(), free_port(), free_port()
    listed = "127.0.0.1:%d;127.0.0.1:%d" % (x, y)
    a = NamesrvProcess(tmp_path, dict(FAST, prometheusListenPort=str(http), routeReadWorkers="0",
                                      addressServiceNamesrvAddr=listed)).start()
    try:
        metrics_url = "http://127.0.0.1:%d/metrics" % http
        deadline = time.monotonic() + 30
        while "rocketmq_namesrv_address_service_fallback 1.0" not in fetch(metrics_url)[1]:
            assert time.monotonic() < deadline, "never fell back:\n" + a.log()
            time.sleep(0.1)
        assert fetch("http://127.0.0.1:%d/rocketmq/nsaddr" % http) == (200, listed + "\n")
        assert "no listed name server answers: the address service serves the whole list" in a.log()
    finally:
        a.stop()


def channel_closes(server):
    """The ``channel_closed`` events of ``server``'s event log (it must have stopped: the log is flushed)."""
    import json
    import os
    logs = os.path.join(server.workdir, "logs")
    events = []
    for name in os.listdir(logs):
        with open(os.path.join(logs, name)) as f:
            events += [json.loads(line) for line in f if line.strip()]
    return [event for event in events if event["event"] == "channel_closed"]


def test_probes_keep_one_connection_so_the_probed_server_logs_no_close_per_probe(pair):
    """Issue 39: a new connection per probe put a ``channel_closed`` in the probed server's event log every
    2 s (120 of 122 events in 4 minutes). Now the probes share one kept connection."""
    a, b, url = pair
    metrics_url = url.replace("/rocketmq/nsaddr", "/metrics")
    answered = 'rocketmq_namesrv_address_service_probes_total{namesrv="127.0.0.1:%d",result="answered"} ' % b.port
    deadline = time.monotonic() + 60
    while True:
        text = fetch(metrics_url)[1]
        count = float(text.split(answered, 1)[1].split()[0]) if answered in text else 0.0
        if count >= 12:
            break
        assert time.monotonic() < deadline, "too few probes:\n" + a.log()
        time.sleep(0.2)
    a.stop()   # its prober closes the kept connection: one close on b
    b.stop()
    closes = channel_closes(b)
    # NamesrvProcess.start's own readiness probe, and the prober's kept connection: not one per probe
    assert len(closes) <= 3, closes
    assert all(event.get("brokerAddr") is None for event in closes)
