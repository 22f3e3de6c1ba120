"""Read-worker settings and what shows a worker answered, for the live read-worker tests."""

import re
import signal
import time

from namesrv.protocol.codes import ResponseCode
from tests.brokers import route_request


WORKERS = {"routeReadWorkers": "1", "routeReadWorkersExclusive": "true"}


def answered_by_workers(server):
    server.stop(signal.SIGTERM)
    match = re.search(r"(\d+) requests answered by workers", server.log())
    assert match, server.log()[-3000:]
    return int(match.group(1))


def wait_for_log(server, text, timeout=30.0):
    deadline = time.monotonic() + timeout
    while text not in server.log():
        assert time.monotonic() < deadline, server.log()[-3000:]
        time.sleep(0.05)


def reads_reach_the_workers(server, clients, register):
    """``register(clients[0])`` a broker with topic ``Shared``, read it five times on every client, and
    check a read worker answered some of them (the clients share the one listening socket)."""
    try:
        register(clients[0])
        for client in clients:
            for _ in range(5):
                assert client.call(route_request("Shared")).code == ResponseCode.SUCCESS
    finally:
        for client in clients:
            client.close()
    assert answered_by_workers(server) > 0


def until_the_route_is_gone(client, topic):
    """Asks ``topic``'s route until the name server no longer has it (a broker's close on a worker reaches
    the main process, whose housekeeping forgets the broker); fails if it is still there after 200 asks."""
    for _ in range(200):
        route = client.call(route_request(topic))
        if route.code == ResponseCode.TOPIC_NOT_EXIST:
            return
        time.sleep(0.01)
    raise AssertionError("%s still routed: %d %s" % (topic, route.code, route.remark))
