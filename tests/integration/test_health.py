"""``/health`` as an orchestrator uses it: 200 only once routes are restored and the remoting port answers."""

import json
import os
import signal
import urllib.error
import urllib.request

from namesrv.protocol.codes import ResponseCode
from tests.brokers import register_request, route_request
from tests.integration.server import free_port


def health(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_health_is_up_once_the_remoting_port_answers_and_routes_are_restored(make_namesrv, tmp_path):
    metrics = free_port()
    server = make_namesrv({"prometheusListenPort": str(metrics)})
    server.start()
    code, body = health(metrics)
    # start() returned on the first accepted connection, so the port serves: UP, measured end to end
    assert code == 200 and body["status"] == "UP" and body["remoting"] == "127.0.0.1:%d" % server.port
    broker = server.client()
    assert broker.call(register_request("C", "b-h", "127.0.0.1:10911", topics=["Healthy", "Healthy2"])).code == 0
    server.stop()
    broker.close()

    restarted = make_namesrv({"prometheusListenPort": str(metrics)}, port=server.port, workdir=tmp_path)
    restarted.start()
    code, body = health(metrics)
    assert code == 200
    with restarted.client() as client:   # UP means the restored routes are served
        assert client.call(route_request("Healthy")).code == ResponseCode.SUCCESS


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(child) for child in f.read().split()]


def test_health_is_down_while_the_remoting_port_does_not_answer(make_namesrv):
    """A hung read worker (exclusive: the only one accepting) holds every new client: DOWN."""
    metrics = free_port()
    server = make_namesrv({"prometheusListenPort": str(metrics), "routeReadWorkers": "1",
                           "routeReadWorkersExclusive": "true"}).start()
    (worker,) = children(server.process.pid)
    os.kill(worker, signal.SIGSTOP)
    try:
        code, body = health(metrics)
    finally:
        os.kill(worker, signal.SIGCONT)
    assert code == 503 and body["status"] == "DOWN" and "no answer from the remoting port" in body["reason"]
    assert health(metrics)[0] == 200


def test_health_is_down_before_the_port_serves():
    from twisted.internet import task
    from twisted.web.test.requesthelper import DummyRequest
    from namesrv.observe.health import HealthResource, Readiness
    request = DummyRequest([b""])
    body = HealthResource(Readiness(), task.Clock()).render_GET(request)
    assert request.responseCode == 503 and json.loads(body)["reason"] == "starting or stopping"


def test_health_command_waits_for_up_and_fails_with_one_line(make_namesrv):
    import subprocess
    import sys
    metrics = free_port()
    server = make_namesrv({"prometheusListenPort": str(metrics)}).start()
    url = "http://127.0.0.1:%d/health" % metrics
    up = subprocess.run([sys.executable, "-m", "namesrv.observe.health", "--wait", "30", url], capture_output=True, text=True,
                        timeout=60)
    assert up.returncode == 0 and '"status": "UP"' in up.stdout
    server.stop()
    down = subprocess.run([sys.executable, "-m", "namesrv.observe.health", url], capture_output=True, text=True, timeout=60)
    assert down.returncode == 1 and down.stderr.startswith("namesrv not ready: ")
    assert len(down.stderr.strip().splitlines()) == 1 and "Traceback" not in down.stderr


def test_shipped_systemd_unit_runs_twistd_in_the_foreground_and_waits_for_health():
    import configparser
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str
    unit.read(os.path.join(os.path.dirname(__file__), "..", "..", "conf", "namesrv.service"))
    service = unit["Service"]
    assert "twistd -n --pidfile= namesrv -c " in service["ExecStart"]
    assert "-m namesrv.observe.health --wait" in service["ExecStartPost"]
    assert int(service["LimitNOFILE"]) >= 65536 and service["KillSignal"] == "SIGTERM"
