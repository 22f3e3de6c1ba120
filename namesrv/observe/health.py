"""``/health`` on the metrics port: ready only once the routes are restored and the remoting port answers.

An orchestrator (systemd's ExecStartPost, a Kubernetes readiness probe, a load balancer) asks
this before sending traffic. "Listening" is not enough: with read workers in exclusive mode
the port is held by the main process but accepts nothing until a worker has its first
replica. So each check sends one real request (GET_BROKER_CLUSTER_INFO) to the remoting
port over TCP, as a client would, and answers 200 only when an answer comes back in time.
Any answer counts (with ACL on, NO_PERMISSION still proves the port serves).

``/health?format=prometheus`` gives the same answer (same status code) in Prometheus's text
format, so a scrape job on ``/health`` is the health check: its ``up`` is 0 when DOWN
(conf/prometheus/prometheus.yml, alert NamesrvHealthDown).
"""

import argparse
import json
import ssl
import sys
import time
import urllib.error
import urllib.request

from twisted.internet import defer
from twisted.logger import Logger
from twisted.web import resource, server

from namesrv.client import BlockingRemotingClient, connect
from namesrv.config import ConfigError, NamesrvConfig
from namesrv.protocol.codes import RequestCode
from namesrv.protocol.command import make_request

log = Logger()

PROBE_TIMEOUT = 2.0


class Readiness:
    """What the service tells the probe: ``serving_address`` is (host, port) once the tables are
    restored and the port is open, None before and after."""

    def __init__(self):
        self.serving_address = None


def probe_host(bind_address):
    """Where to connect to reach a port bound to ``bind_address`` (any-address binds: loopback)."""
    if bind_address in ("", "0.0.0.0"):
        return "127.0.0.1"
    if bind_address == "::":
        return "::1"
    return bind_address


@defer.inlineCallbacks
def probe(reactor, host, port, timeout=PROBE_TIMEOUT, code=RequestCode.GET_BROKER_CLUSTER_INFO):
    """One round trip of request ``code`` on a new connection; returns the milliseconds it took,
    raises on failure (any answer counts). The address service probes its peers this way too."""
    started = reactor.seconds()
    client = yield connect(reactor, host, port).addTimeout(timeout, reactor)
    try:
        remaining = max(0.1, timeout - (reactor.seconds() - started))
        yield client.call(make_request(code)).addTimeout(remaining, reactor)
    finally:
        client.transport.loseConnection()
    return (reactor.seconds() - started) * 1000.0


class HealthResource(resource.Resource):
    """GET /health: 200 ``{"status": "UP", ...}`` or 503 ``{"status": "DOWN", "reason": ...}``."""

    isLeaf = True

    def __init__(self, readiness, reactor):
        resource.Resource.__init__(self)
        self.readiness = readiness
        self.reactor = reactor

    def render_GET(self, request):
        render = _prometheus_text if request.args.get(b"format") == [b"prometheus"] else _json
        request.setHeader(b"content-type", render.content_type)
        request.setHeader(b"cache-control", b"no-store")
        address = self.readiness.serving_address
        if address is None:
            return self._answer(request, render, 503, {"status": "DOWN", "reason": "starting or stopping"})
        host, port = address
        gone = []
        request.notifyFinish().addErrback(lambda failure: gone.append(failure))
        d = probe(self.reactor, probe_host(host), port)
        d.addCallbacks(
            lambda ms: {"status": "UP", "remoting": "%s:%d" % (host, port), "probeMillis": round(ms, 2)},
            lambda failure: {"status": "DOWN", "remoting": "%s:%d" % (host, port),
                             "reason": "no answer from the remoting port: %s" % failure.getErrorMessage()})
        d.addCallback(lambda body: None if gone else self._finish(request, render, body))
        return server.NOT_DONE_YET

    def _finish(self, request, render, body):
        request.setResponseCode(200 if body["status"] == "UP" else 503)
        request.write(render(body))
        request.finish()

    def _answer(self, request, render, code, body):
        request.setResponseCode(code)
        return render(body)


def _json(body):
    return json.dumps(body).encode() + b"\n"


_json.content_type = b"application/json"


def _prometheus_text(body):
    """The answer as two gauges; the reason (a free text) stays in the JSON answer."""
    up = 1 if body["status"] == "UP" else 0
    lines = ["# HELP rocketmq_namesrv_health_up 1 when /health says UP (the remoting port answered a request).",
             "# TYPE rocketmq_namesrv_health_up gauge",
             "rocketmq_namesrv_health_up %d" % up]
    if "probeMillis" in body:
        lines += ["# HELP rocketmq_namesrv_health_probe_seconds Time the health probe's request took.",
                  "# TYPE rocketmq_namesrv_health_probe_seconds gauge",
                  "rocketmq_namesrv_health_probe_seconds %r" % (body["probeMillis"] / 1000.0)]
    return ("\n".join(lines) + "\n").encode()


_prometheus_text.content_type = b"text/plain; version=0.0.4; charset=utf-8"


def ask_remoting(host, port, timeout=PROBE_TIMEOUT, tls=False):
    """One GET_BROKER_CLUSTER_INFO on a new blocking connection: the milliseconds it took; raises OSError when
    nothing answers. Any answer counts, as for /health. ``tls``: over TLS, the server's certificate not checked
    (a port with ``tlsMode=enforcing`` closes a plain client; who answers is not the question here)."""
    started = time.monotonic()
    client = BlockingRemotingClient(host, port, timeout=timeout)
    try:
        if tls:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            client.sock = context.wrap_socket(client.sock, server_hostname=host)
        client.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO))
    except (ssl.SSLError, ValueError) as e:
        raise OSError(str(e))
    finally:
        client.close()
    return (time.monotonic() - started) * 1000.0


def remoting_of(config_file):
    """``(host, port, tls)`` to ask for the server started with ``-c config_file``: its bindAddress and
    listenPort, read by the server's own loader (so the wait always matches the file); ValueError when the
    file cannot say (unreadable, a bad value, listenPort=0: a port chosen at start)."""
    config = NamesrvConfig()
    try:
        config.load_file(config_file)
    except ConfigError as e:
        raise ValueError(str(e))
    if not config.listenPort:
        raise ValueError("%s: listenPort=0 (a port chosen at start) cannot be waited on: give it a port"
                         % config_file)
    return probe_host(config.bindAddress), config.listenPort, config.tlsMode.lower() == "enforcing"


def main(argv=None):
    """``python -m namesrv.observe.health [--wait SECONDS] (URL | -c FILE)``: exit 0 once the server is ready.

    URL: its /health on the metrics port says UP. ``-c FILE``: the remoting port of the server started with
    that properties file (its bindAddress and listenPort) answers a request, as /health asks it: needs no
    metrics port. For a systemd ExecStartPost or a container's health check (a blocking CLI, never run
    inside the server).
    """
    parser = argparse.ArgumentParser(prog="python -m namesrv.observe.health", description=main.__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", help="the health URL, e.g. http://127.0.0.1:5557/health")
    parser.add_argument("-c", "--config", help="the server's properties file: ask its remoting port instead")
    parser.add_argument("--wait", type=float, default=0.0, help="keep asking for this many seconds (default: once)")
    args = parser.parse_args(argv)
    if (args.url is None) == (args.config is None):
        parser.error("give the health URL or -c FILE (one of them)")
    if args.config is not None:
        try:
            host, port, tls = remoting_of(args.config)
        except ValueError as e:
            print("namesrv not ready: %s" % e, file=sys.stderr)
            return 1
    deadline = time.monotonic() + args.wait
    while True:
        if args.config is not None:
            where = "%s:%d" % (host, port)
            try:
                millis = ask_remoting(host, port, tls=tls)
                print(json.dumps({"status": "UP", "remoting": where, "probeMillis": round(millis, 2)}))
                return 0
            except OSError as e:
                reason = "no answer from the remoting port %s: %s" % (where, e.strerror or e)
        else:
            try:
                with urllib.request.urlopen(args.url, timeout=5) as answer:
                    print(answer.read().decode(errors="replace").strip())
                    return 0
            except urllib.error.HTTPError as e:
                reason = e.read().decode(errors="replace").strip()
            except (OSError, ValueError) as e:
                reason = "%s: %s" % (args.url, getattr(e, "reason", e))
        if time.monotonic() >= deadline:
            print("namesrv not ready: %s" % reason, file=sys.stderr)
            return 1
        time.sleep(0.5)


if __name__ == "__main__":
    raise SystemExit(main())
