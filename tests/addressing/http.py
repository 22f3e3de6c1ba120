"""HTTP helpers of the address service tests: fetching a served list, a site on a port."""

import time
import types
import urllib.error
import urllib.request
from prometheus_client import CollectorRegistry

from twisted.internet.testing import StringTransport
from twisted.web import resource

from namesrv.observe.httpport import QuietSite


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


class Port:
    """What the wiring needs of the Prometheus port: its registry and its children."""

    def __init__(self):
        self.metrics = types.SimpleNamespace(registry=CollectorRegistry())
        self.children = {}

    def site(self):
        root = resource.Resource()
        for name, child in self.children.items():
            root.putChild(name, child)
        return QuietSite(root)


def exchange(site, raw):
    """Send ``raw`` on a new connection; (status, headers, body, closed) of the first answer."""
    channel = site.buildProtocol(None)
    transport = StringTransport()
    channel.makeConnection(transport)
    channel.dataReceived(raw)
    out = transport.value()
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    headers = {name.lower(): value for name, _, value in (line.partition(b": ") for line in lines[1:])}
    if headers.get(b"transfer-encoding") == b"chunked":
        body = dechunk(body)
    channel.connectionLost(None)
    return status, headers, body, transport.disconnecting


def dechunk(data):
    out = b""
    while data:
        size, _, rest = data.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            break
        out, data = out + rest[:n], rest[n + 2:]
    return out


def get(site, target, method=b"GET"):
    return exchange(site, method + b" " + target + b" HTTP/1.1\r\nHost: ns\r\n\r\n")
