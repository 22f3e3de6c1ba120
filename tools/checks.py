"""Is the server alive and are its tables consistent? Asked over the wire only.

A ``ControlBroker`` registers a known cluster/broker/topics at the start and keeps its
connection open (fuzzed frames never use these names). ``TableChecker.check()`` opens a
fresh connection and verifies, within ``timeout`` seconds:

- the control topics' routes are byte-for-byte the answers recorded after registration;
- GET_BROKER_CLUSTER_INFO is self-consistent: every broker name of every cluster has a
  BrokerData with addresses, every BrokerData is in a cluster, the control broker is there;
- every route of the fuzz topics is internally consistent (each QueueData's broker has a
  BrokerData), and its brokers exist in cluster info with the same addresses (checked against
  cluster info read before and after the routes, equal, and only reported when a second look
  finds the same: see ``TableChecker.check``).

No answer on a fresh connection within ``timeout`` counts as a crash, like a dead process.
"""

import json
import socket
import threading
import time

from namesrv.client import BlockingRemotingClient
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tools import frames

CONTROL_CLUSTER = "RobustnessControlCluster"
CONTROL_BROKER = "robustness-control-broker"
CONTROL_ADDR = "127.0.0.1:19876"
CONTROL_TOPICS = ("ControlTopicA", "ControlTopicB", "ControlTopicC")


def loads_fastjson(data):
    """JSON that may have fastjson's unquoted integer keys ({0:"ip:port"}); strings are left alone."""
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    out = []
    i, n = 0, len(text)
    expect_key = False
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
            expect_key = False
            continue
        if expect_key and (c.isdigit() or c == "-"):
            j = i + 1
            while j < n and text[j].isdigit():
                j += 1
            out.append('"%s"' % text[i:j])
            i = j
            expect_key = False
            continue
        if c in "{,":
            expect_key = True
        elif not c.isspace():
            expect_key = False
        out.append(c)
        i += 1
    return json.loads("".join(out))


def control_request():
    from tests.brokers import register_request  # Java-format REGISTER_BROKER, independent of the server

    return register_request(CONTROL_CLUSTER, CONTROL_BROKER, CONTROL_ADDR, topics=list(CONTROL_TOPICS))


class KeptBroker:
    """A broker connection that registers with ``request()`` and can keep itself alive.

    With ``keepalive`` seconds, a thread re-registers that often (same DataVersion), so the
    broker neither expires nor idles out while the caller is busy: hostile scenarios last
    longer than the short idle timeouts they are run with."""

    def __init__(self, host, port, request, timeout=10.0, keepalive=None):
        self.request = request
        self.client = BlockingRemotingClient(host, port, timeout=timeout)
        self._lock = threading.Lock()
        self.last_heartbeat = 0.0
        self.heartbeat(every=0)
        self._stop = threading.Event()
        self._thread = None
        if keepalive:
            self._thread = threading.Thread(target=self._keepalive, args=(keepalive,), daemon=True)
            self._thread.start()

    def heartbeat(self, every=20.0):
        """Re-register if the last registration is ``every`` seconds old."""
        with self._lock:
            if time.monotonic() - self.last_heartbeat >= every:
                answer = self.client.call(self.request())
                if answer.code != ResponseCode.SUCCESS:
                    raise RuntimeError("registration refused: %s %s" % (answer.code, answer.remark))
                self.last_heartbeat = time.monotonic()

    def _keepalive(self, interval):
        while not self._stop.wait(interval):
            try:
                self.heartbeat(every=0)
            except (OSError, ConnectionError, RuntimeError):
                return

    def close(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ControlBroker(KeptBroker):
    """The broker whose routes must never change while the server is fuzzed or attacked."""

    def __init__(self, host, port, timeout=10.0, keepalive=None):
        KeptBroker.__init__(self, host, port, control_request, timeout, keepalive)


def route_request(topic):
    return make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, version=409)


class TableChecker:
    def __init__(self, host, port, timeout=5.0, fuzz_topics=frames.FUZZ_TOPICS):
        self.host, self.port, self.timeout = host, port, timeout
        self.fuzz_topics = fuzz_topics
        self.expected_routes = None
        #: what ``check`` saw: route answers cross-checked against a stable cluster info, and disagreements that
        #: a second look no longer found (a broker that registered and left between the reads) or that moved
        #: with the cluster info (``unstable``): each counted, none reported
        self.routes_cross_checked = 0
        self.transient = 0
        self.unstable = 0

    def _client(self):
        return BlockingRemotingClient(self.host, self.port, timeout=self.timeout)

    def record_expected(self):
        """Remember the control routes as they are now; they must never change."""
        with self._client() as c:
            self.expected_routes = {t: c.call(route_request(t)).body for t in CONTROL_TOPICS}
        problems = self._control_route_problems()
        if problems:
            raise RuntimeError("control routes wrong before fuzzing: %s" % problems)

    def alive(self):
        """A good request on a fresh connection is answered (any answer) within ``timeout``."""
        try:
            with self._client() as c:
                return c.call(route_request(CONTROL_TOPICS[0])).code in (
                    ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST)
        except (OSError, ConnectionError):
            return False

    def check(self, attempts=3, pause=0.05):
        """``[]`` when all is well, else a list of problems; ``["no answer: ..."]`` counts as a crash.

        A problem inside one answer (a route, the cluster info, a control route) is reported at once: no
        timing explains it. A route that names a broker the cluster info does not is only reported if it is
        seen again ``pause`` seconds later, in every attempt. Two equal cluster-info reads around the route
        reads do not prove nothing changed between them: a registration that was still on its way when the
        fuzz client closed (answered after the client's next read, as Java may too) and its removal when the
        server saw the close can both land in between (A-B-A), and a route read between them rightly names
        the broker. The fuzz client has stopped sending, so such changes settle; broken tables do not.
        """
        try:
            with self._client() as c:
                problems = []
                for attempt in range(attempts):
                    if attempt:
                        time.sleep(pause)
                    own, across = self._check_once(c)
                    if own:
                        return own
                    if not across:
                        self.transient += bool(problems)
                        return []
                    self.unstable += across == ["unstable"]
                    problems = [] if across == ["unstable"] else across
                return problems   # the same disagreement every time, or the tables kept changing ([])
        except (OSError, ConnectionError) as e:
            return ["no answer: %s: %s" % (type(e).__name__, e)]

    def _check_once(self, c):
        """(problems inside single answers, problems across them): the second is ``["unstable"]`` when the
        cluster info changed between the reads around the routes."""
        problems = []
        for topic in CONTROL_TOPICS:
            answer = c.call(route_request(topic))
            if answer.code != ResponseCode.SUCCESS or answer.body != self.expected_routes[topic]:
                problems.append("control route %s changed: %s %r" % (topic, answer.code, answer.body))
        before = c.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO))
        routes = {t: c.call(route_request(t)) for t in self.fuzz_topics}
        after = c.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO))
        if before.code != ResponseCode.SUCCESS:
            return problems + ["cluster info answered %s %s" % (before.code, before.remark)], []
        info = loads_fastjson(before.body)
        problems += cluster_info_problems(info)
        for topic, answer in routes.items():
            if answer.code == ResponseCode.TOPIC_NOT_EXIST:
                continue
            if answer.code != ResponseCode.SUCCESS:
                problems.append("route %s answered %s %s" % (topic, answer.code, answer.remark))
                continue
            problems += route_problems(topic, loads_fastjson(answer.body), None)
        if problems:
            return problems, []
        if before.body != after.body:
            return [], ["unstable"]
        across = []
        for topic, answer in routes.items():
            if answer.code == ResponseCode.SUCCESS:
                self.routes_cross_checked += 1
                across += route_problems(topic, loads_fastjson(answer.body), info)
        return [], across

    def _control_route_problems(self):
        problems = []
        for topic, body in self.expected_routes.items():
            route = loads_fastjson(body)
            names = [b["brokerName"] for b in route.get("brokerDatas", [])]
            queues = [(q["brokerName"], q["readQueueNums"], q["writeQueueNums"], q["perm"])
                      for q in route.get("queueDatas", [])]
            if names != [CONTROL_BROKER] or queues != [(CONTROL_BROKER, 4, 4, 6)]:
                problems.append("%s: %s %s" % (topic, names, queues))
        return problems


def cluster_info_problems(info):
    problems = []
    brokers = info.get("brokerAddrTable") or {}
    clusters = info.get("clusterAddrTable") or {}
    clustered = set()
    for cluster, names in clusters.items():
        if not names:
            problems.append("cluster %r has no brokers" % cluster)
        for name in names:
            clustered.add(name)
            data = brokers.get(name)
            if not data or not data.get("brokerAddrs"):
                problems.append("cluster %r lists broker %r without addresses" % (cluster, name))
    for name, data in brokers.items():
        if name not in clustered:
            problems.append("broker %r is in no cluster" % name)
        if data.get("brokerName") != name:
            problems.append("BrokerData %r filed under %r" % (data.get("brokerName"), name))
    control = brokers.get(CONTROL_BROKER) or {}
    if CONTROL_BROKER not in clusters.get(CONTROL_CLUSTER, ()) or \
            list((control.get("brokerAddrs") or {}).values()) != [CONTROL_ADDR]:
        problems.append("control broker missing from cluster info: %r" % control)
    return problems


def route_problems(topic, route, info):
    """Inside one answer (info None), or against a stable cluster info."""
    problems = []
    datas = {b.get("brokerName"): b for b in route.get("brokerDatas") or []}
    queues = route.get("queueDatas") or []
    if not queues:
        problems.append("route %s has no queue data" % topic)
    for q in queues:
        if q.get("brokerName") not in datas:
            problems.append("route %s: queue data of %r without broker data" % (topic, q.get("brokerName")))
    for name, data in datas.items():
        if not data.get("brokerAddrs"):
            problems.append("route %s: broker %r has no addresses" % (topic, name))
        if info is not None:
            known = (info.get("brokerAddrTable") or {}).get(name)
            if known is None or known.get("brokerAddrs") != data.get("brokerAddrs"):
                problems.append("route %s: broker %r is not in cluster info as %r" % (topic, name, known))
    return problems


def rss_kib(pid, field="VmRSS"):
    """VmRSS (or VmHWM, the peak) of a process in KiB, from /proc; None when unknown."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, TypeError):
        return None
    return None


def server_log(server):
    """The whole twistd log of a NamesrvProcess, rotated files (twistd.log.N, oldest first) included."""
    import glob

    def rank(path):
        suffix = path[len(server.log_file):].lstrip(".")
        return -int(suffix) if suffix.isdigit() else 0

    text = []
    for path in sorted(glob.glob(server.log_file + "*"), key=rank):
        with open(path, errors="replace") as f:
            text.append(f.read())
    return "".join(text)


def wait_for_port(host, port, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False
