"""The address service in a whole in-process server: on the Prometheus port, refusals at start, and the properties."""

import pytest
import pytest_twisted
from twisted.internet import reactor, task, threads

from namesrv.config import NamesrvConfig
from namesrv.service import make_service
from tests.addressing.http import fetch
from tests.config_for import service_config
from tests.integration.server import free_port


def test_every_property_has_its_default_and_is_printed_by_p():
    text = NamesrvConfig().to_properties_text()
    for line in ("addressServiceNamesrvAddr=", "addressServiceSubgroups=nsaddr",
                 "addressServiceProbeIntervalMillis=2000", "addressServiceProbeTimeoutMillis=1500",
                 "addressServiceDownAfterMillis=5000", "addressServiceUpAfterAnswers=2",
                 "addressServiceMaxRequestsPerSecond=500"):
        assert line + "\n" in text


def test_the_list_and_subgroups_cannot_be_changed_remotely_by_default():
    assert {"addressServiceNamesrvAddr", "addressServiceSubgroups"} <= NamesrvConfig().black_list()


def test_a_list_with_no_port_to_serve_it_refuses_to_start(tmp_path):
    with pytest.raises(ValueError, match="addressServiceNamesrvAddr is set but prometheusListenPort is 0"):
        make_service(service_config(tmp_path, addressServiceNamesrvAddr="127.0.0.1:9876"), clock=task.Clock())


@pytest.mark.parametrize("overrides, says", [
    (dict(addressServiceNamesrvAddr="127.0.0.1"), "addressServiceNamesrvAddr: '127.0.0.1' is not host:port"),
    (dict(addressServiceNamesrvAddr=" ; "), "addressServiceNamesrvAddr lists no name server"),
    (dict(addressServiceNamesrvAddr="127.0.0.1:9876", addressServiceSubgroups="a/b"),
     "addressServiceSubgroups: 'a/b' is not a subgroup"),
])
def test_a_bad_list_or_subgroup_refuses_to_start_naming_the_key(tmp_path, overrides, says):
    with pytest.raises(ValueError) as e:
        make_service(service_config(tmp_path, prometheusListenPort=free_port(), **overrides), clock=task.Clock())
    assert says in str(e.value)


def test_twistd_refuses_with_one_line(tmp_path, capsys, monkeypatch):
    """Only this start's own state decides: its files under a HOME of its own, no fixed port (the default
    route snapshot under the real HOME, or port 9876, may be another server's on this machine)."""
    from namesrv import tap
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "ns.properties").write_text("addressServiceNamesrvAddr=nohost\nkvConfigPath=%s\nlistenPort=0\n"
                                            "prometheusListenPort=%d\n" % (tmp_path / "kv.json", free_port()))
    options = tap.Options()
    options.parseOptions(["-c", str(tmp_path / "ns.properties")])
    with pytest.raises(SystemExit):
        tap.makeService(options)
    assert "namesrv: refusing to start: addressServiceNamesrvAddr: 'nohost' is not host:port" in capsys.readouterr().err


@pytest_twisted.inlineCallbacks
def test_the_server_serves_its_list_on_the_prometheus_port_and_drops_a_silent_peer(tmp_path):
    """Itself and a port nobody listens on: the silent one leaves once its probes fail past
    addressServiceDownAfterMillis (real sockets, short settings; the clock is the reactor's)."""
    http, silent, listen = free_port(), free_port(), free_port()
    own = "127.0.0.1:%d" % listen
    config = service_config(tmp_path, listenPort=listen, prometheusListenPort=http,
                            addressServiceNamesrvAddr="%s;127.0.0.1:%d" % (own, silent),
                            addressServiceProbeIntervalMillis=100, addressServiceDownAfterMillis=300,
                            addressServiceProbeTimeoutMillis=1000)
    svc = make_service(config, clock=reactor, reactor=reactor)
    svc.startService()
    try:
        url = "http://127.0.0.1:%d/rocketmq/nsaddr" % http
        code, body = yield threads.deferToThread(fetch, url)
        assert code == 200 and body == "%s;127.0.0.1:%d\n" % (own, silent)
        for _ in range(200):             # the probes run on the reactor: poll its answer, never a sleep's
            code, body = yield threads.deferToThread(fetch, url)
            if body == own + "\n":
                break
            yield task.deferLater(reactor, 0.05, lambda: None)
        assert body == own + "\n"
        _, metrics = yield threads.deferToThread(fetch, "http://127.0.0.1:%d/metrics" % http)
        assert ('rocketmq_namesrv_address_service_changes_total{change="removed",namesrv="127.0.0.1:%d"} 1.0'
                % silent) in metrics
        assert 'rocketmq_namesrv_address_service_namesrv_served{namesrv="%s"} 1.0' % own in metrics
        assert 'rocketmq_namesrv_address_service_probes_total{namesrv="%s",result="answered"} 0.0' % own \
            not in metrics
        assert 'rocketmq_namesrv_address_service_probes_total{namesrv="127.0.0.1:%d",result="answered"} 0.0' \
            % silent in metrics
    finally:
        yield svc.stopService()


def test_the_list_and_subgroups_follow_a_change_once_out_of_the_black_list():
    from twisted.logger import capturedLogs, formatEvent
    from namesrv.addressing.wiring import address_service
    from tests.addressing.http import Port, get
    from tests.config_for import make_config
    clock = task.Clock()
    config = make_config(prometheusListenPort=5557, addressServiceNamesrvAddr="127.0.0.1:9876", configBlackList="")
    port = Port()
    address_service(config, port, clock, clock)
    site = port.site()
    config.update({"addressServiceNamesrvAddr": "127.0.0.1:9876;127.0.0.2:9876", "addressServiceSubgroups": "other"})
    assert get(site, b"/rocketmq/other")[2] == b"127.0.0.1:9876;127.0.0.2:9876\n"
    assert get(site, b"/rocketmq/nsaddr")[0] == 404
    with capturedLogs() as events:
        config.update({"addressServiceNamesrvAddr": "nohost"})
        config.update({"addressServiceSubgroups": "a/b"})
    said = [formatEvent(e) for e in events if "keeps what it served" in formatEvent(e)]
    assert len(said) == 2 and "'nohost' is not host:port" in said[0]
    assert get(site, b"/rocketmq/other")[2] == b"127.0.0.1:9876;127.0.0.2:9876\n"
