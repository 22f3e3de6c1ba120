"""Is a read worker's replica ever seen half applied? A check over real processes.

    python -m tools.replicacheck --rounds 10 --topics 12000

A server with one read worker; a broker that stays is on ``--topics`` topics, and another one on the same
topics registers and leaves (its connection closes) ``--rounds`` times: the main process forgets it in one
operation, and the workers get a publication of ``topics / 500`` parts (quiet: nobody was answered about the
close). Meanwhile readers on the worker read the cluster info, a random topic's route, and the cluster info
again. While the second broker is registered it is on every topic: a route without it between two cluster
infos that both list it saw the publication half applied. Before issue 57 the worker answered between the
parts (46 of 30,959 reads in 10 rounds); tests/readworkers/test_interleavings.py explores the same in process.
"""

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from namesrv.client import BlockingRemotingClient  # noqa: E402
from namesrv.protocol.codes import RequestCode, ResponseCode  # noqa: E402
from namesrv.protocol.command import make_request  # noqa: E402
from tests.brokers import register_request, route_request  # noqa: E402
from tests.integration.server import NamesrvProcess  # noqa: E402
from tools.checks import loads_fastjson  # noqa: E402

LEAVING = "replica-check-leaves"


def check(rounds=10, topics=12000, readers=2, seed=1, hold=0.5, workdir=None):
    """The figures: reads, half-applied observations (and up to 3 examples), rounds."""
    names = ["ReplicaCheck-%05d" % i for i in range(topics)]
    server = NamesrvProcess(workdir or tempfile.mkdtemp(prefix="namesrv-replicacheck-"),
                            {"routeReadWorkers": "1"}).start()
    stop = threading.Event()
    figures = {"rounds": rounds, "topics": topics, "reads": 0, "half_applied": 0, "examples": []}
    lock = threading.Lock()

    def cluster(client):
        answer = client.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO))
        return loads_fastjson(answer.body).get("brokerAddrTable") or {}

    def read(index):
        rng = random.Random(seed * 100 + index)
        with BlockingRemotingClient("127.0.0.1", server.port, timeout=30) as client:
            while not stop.is_set():
                before = cluster(client)
                topic = rng.choice(names)
                route = client.call(route_request(topic))
                after = cluster(client)
                seen = route.code == ResponseCode.SUCCESS and LEAVING in before and LEAVING in after and \
                    LEAVING not in [q["brokerName"] for q in loads_fastjson(route.body)["queueDatas"]]
                with lock:
                    figures["reads"] += 1
                    if seen:
                        figures["half_applied"] += 1
                        if len(figures["examples"]) < 3:
                            figures["examples"].append(topic)

    staying = BlockingRemotingClient("127.0.0.1", server.port, timeout=30)
    try:
        register(staying, "replica-check-stays", "127.0.0.1:30001", names)
        threads = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(readers)]
        for thread in threads:
            thread.start()
        for _ in range(rounds):
            with BlockingRemotingClient("127.0.0.1", server.port, timeout=30) as leaving:
                register(leaving, LEAVING, "127.0.0.1:30002", names)
                time.sleep(hold)
            time.sleep(hold)   # closed: the main process forgets it; the workers get the parts
        stop.set()
        for thread in threads:
            thread.join(30)
    finally:
        stop.set()
        staying.close()
        server.stop()
    return figures


def register(client, name, address, names):
    answer = client.call(register_request("ReplicaCheck", name, address, topics=names, compressed=True))
    if answer.code != ResponseCode.SUCCESS:
        raise RuntimeError("%s not registered: %s %s" % (name, answer.code, answer.remark))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--topics", type=int, default=12000, help="more than 10,000: publications of parts")
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    figures = check(args.rounds, args.topics, args.readers, args.seed)
    print(json.dumps(figures))
    return 0 if figures["half_applied"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
