"""One fake broker on its own blocking connection: register, unregister, and time each round trip.

A broker's routes live as long as the connection it registered on: a ``FakeBroker`` keeps its socket
open until ``close()``. For a few brokers; a fleet is ``bench.lib.brokers.fleet``.
"""

import time

from namesrv.client import BlockingRemotingClient
from namesrv.protocol.codes import RequestCode
from namesrv.protocol.command import make_request

from bench.lib.brokers.bodies import register_body
from bench.lib.brokers.frames import CLUSTER, register_request, unregister_request
from bench.lib.brokers.layouts import broker_addr


class FakeBroker:
    def __init__(self, port, name, index, broker_id=0, cluster=CLUSTER, timeout=60.0):
        self.name = name
        self.broker_id = broker_id
        self.addr = broker_addr(index)
        self.cluster = cluster
        self.client = BlockingRemotingClient("127.0.0.1", port, timeout=timeout)

    def register(self, body, compressed):
        """``(answer, seconds)`` of one REGISTER_BROKER round trip."""
        request = register_request(self.name, self.addr, body, compressed, self.broker_id, self.cluster)
        started = time.perf_counter()
        answer = self.client.call(request)
        return answer, time.perf_counter() - started

    def register_topics(self, topics, compressed=False, counter=1):
        answer, seconds = self.register(register_body(topics, compressed, counter), compressed)
        if answer.code != 0:
            raise RuntimeError("registration of %s refused: %s %s" % (self.name, answer.code, answer.remark))
        return seconds

    def unregister(self):
        return self.client.call(unregister_request(self))

    def trivial(self):
        """GET_KV_CONFIG for a missing key: the cheapest request that still goes through a processor."""
        request = make_request(RequestCode.GET_KV_CONFIG, {"namespace": "BENCH", "key": "absent"})
        started = time.perf_counter()
        self.client.call(request)
        return time.perf_counter() - started

    def close(self):
        self.client.close()
