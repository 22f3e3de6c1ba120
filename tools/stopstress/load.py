"""The load a stop falls into: brokers registering, KV writes, route reads, metrics scrapes and the
controller's brokers, from threads that reconnect to whichever server is there (the campaign starts and
stops one after another on the same ports)."""

import collections
import http.client
import random
import threading

from namesrv.client import BlockingRemotingClient, leader_port
from namesrv.protocol.codes import RequestCode
from namesrv.protocol.command import make_request
from tests.brokers import register_request, route_request

#: a client whose server is gone tries again this often
RECONNECT = 0.05
#: topics of the one large broker (its registration and the snapshots take a few ms)
BULK_TOPICS = 4000


class Load:
    """``brokers`` broker clients (each registers its topics, then re-registers now and then, puts KV pairs
    and reads routes, all on its connection, which the read worker hands to the main process), ``readers``
    route and cluster-info readers (answered by the read worker), one bulk broker, one scraper of the
    metrics and status pages, and one controller-mode broker beating on the controller group."""

    def __init__(self, port, seed, brokers=3, readers=3, metrics_port=None, status_port=None, controllers=()):
        self.port = port
        self.metrics_port = metrics_port
        self.status_port = status_port
        self.controllers = list(controllers)
        self.stop_event = threading.Event()
        self.counts = collections.Counter()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._broker, args=(i, random.Random(seed * 100 + i)), daemon=True)
                         for i in range(brokers)]
        self._threads += [threading.Thread(target=self._reader, args=(i, random.Random(seed * 100 + 50 + i)),
                                           daemon=True) for i in range(readers)]
        self._threads.append(threading.Thread(target=self._bulk, daemon=True))
        if metrics_port or status_port:
            # several Prometheus servers and a Grafana: one scraper back to back, one paced over every page
            self._threads.append(threading.Thread(target=self._scraper, args=(0.0, True), daemon=True))
            self._threads.append(threading.Thread(target=self._scraper, args=(0.02, False), daemon=True))
        if self.controllers:
            self._threads.append(threading.Thread(target=self._controller_broker, daemon=True))

    def start(self):
        for thread in self._threads:
            thread.start()
        return self

    def stop(self):
        self.stop_event.set()
        for thread in self._threads:
            thread.join(15)

    def count(self, what, n=1):
        with self._lock:
            self.counts[what] += n

    # -- the clients ------------------------------------------------------------------------------
    def _connected(self, body, port=None, timeout=5.0):
        """Run ``body(client)`` on fresh connections until the campaign ends; a lost server is retried."""
        while not self.stop_event.is_set():
            try:
                with BlockingRemotingClient("127.0.0.1", port or self.port, timeout=timeout) as client:
                    body(client)
            except (OSError, ConnectionError, ValueError):
                self.count("connection lost")
                self.stop_event.wait(RECONNECT)

    def _broker(self, index, rng):
        name, addr = "stop-broker-%d" % index, "127.0.0.1:%d" % (21000 + index)
        topics = ["Stop-%d-%d" % (index, t) for t in range(200)]

        def body(client):
            counter = rng.randrange(1, 1000)
            while not self.stop_event.is_set():
                step = rng.random()
                if step < 0.2:
                    counter += 1   # a new data version: the routes change, a publication follows
                    client.call(register_request("StopCluster", name, addr, topics=rng.sample(topics, 150),
                                                 counter=counter))
                    self.count("registrations")
                elif step < 0.5:
                    client.call(make_request(RequestCode.PUT_KV_CONFIG, {"namespace": "StopNS", "key": name,
                                                                         "value": str(rng.random())}))
                    self.count("kv writes")
                else:
                    client.call(route_request(rng.choice(topics)))
                    self.count("route reads")
        self._connected(body)

    def _reader(self, index, rng):
        def body(client):
            for _ in range(rng.randrange(20, 200)):   # a new connection now and then
                if self.stop_event.is_set():
                    return
                if rng.random() < 0.1:
                    client.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO))
                else:
                    client.call(route_request("Stop-%d-%d" % (rng.randrange(3), rng.randrange(200))))
                self.count("route reads")
        self._connected(body)

    def _bulk(self):
        topics = ["StopBulk-%d" % t for t in range(BULK_TOPICS)]

        def body(client):
            counter = 0
            while not self.stop_event.is_set():
                counter += 1
                client.call(register_request("StopCluster", "stop-bulk", "127.0.0.1:22000", topics=topics,
                                             counter=counter, compressed=True))
                self.count("registrations")
                self.stop_event.wait(0.5)
        self._connected(body, timeout=15.0)

    def _scraper(self, pause, metrics_only):
        """As Prometheus and a browser do: kept-alive connections, a page every ``pause`` seconds."""
        pages = [(self.metrics_port, "/metrics")]
        if not metrics_only:
            pages += [(self.metrics_port, "/health"), (self.status_port, "/")]
        pages = [(port, path) for port, path in pages if port]
        connections = {}
        while not self.stop_event.is_set():
            for port, path in pages:
                try:
                    connection = connections.get(port)
                    if connection is None:
                        connection = connections[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                    connection.request("GET", path)
                    connection.getresponse().read()
                    self.count("page reads")
                except (OSError, http.client.HTTPException):
                    connections.pop(port).close()
                    self.count("connection lost")
                    self.stop_event.wait(0.01)
            self.stop_event.wait(pause)

    def _controller_broker(self):
        """A 5.x broker in controller mode: an id, its registration, an election, heartbeats, on the leader."""
        where = {"clusterName": "StopCluster", "brokerName": "stop-ctl-broker"}
        address = "127.0.0.1:23000"

        def body(client):
            answer = client.call(make_request(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, where))
            if answer.code != 0:
                raise ValueError("not the leader")
            broker_id = int(answer.ext["nextBrokerId"])
            client.call(make_request(RequestCode.CONTROLLER_APPLY_BROKER_ID, dict(
                where, appliedBrokerId=broker_id, registerCheckCode="%s;1700000000000" % address)))
            client.call(make_request(RequestCode.CONTROLLER_REGISTER_BROKER, dict(
                where, brokerId=broker_id, brokerAddress=address)))
            while not self.stop_event.is_set():
                client.call(make_request(RequestCode.BROKER_HEARTBEAT, dict(
                    where, brokerAddr=address, brokerId=broker_id, heartbeatTimeoutMills=3000, epoch=1,
                    maxOffset=100)))
                client.call(make_request(RequestCode.CONTROLLER_ELECT_MASTER, dict(
                    where, brokerId=broker_id, designateElect="false")))
                self.count("controller requests")
                self.stop_event.wait(0.05)

        while not self.stop_event.is_set():
            port = leader_port(self.controllers)
            if port is None:
                self.stop_event.wait(0.1)
                continue
            try:
                with BlockingRemotingClient("127.0.0.1", port, timeout=5) as client:
                    body(client)
            except (OSError, ConnectionError, ValueError, KeyError):
                self.count("connection lost")
                self.stop_event.wait(RECONNECT)
