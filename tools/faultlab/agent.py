"""The fault lab's clients, in their own namespace: they watch, read, write and produce, and write down
everything they saw (JSON lines, ``time.monotonic()`` stamps) for the checkers.

    python -m tools.faultlab.agent --controllers A,B,C --namesrv A,B,C --brokers X,Y --out FILE [--fake-brokers]

- **watch**: every 100 ms each controller's GET_REPLICA_INFO and GET_METADATA_INFO, and each name
  server's route of ``LabTopic`` (who is brokerId 0);
- **registers**: two clients that read (CONTROLLER_GET_NEXT_BROKER_ID) and claim ids
  (CONTROLLER_APPLY_BROKER_ID with a fresh check code) on groups ``lin-0`` and ``lin-1`` at the
  controller that says it leads: a history the linearizability checker reads;
- **produce** (``--fake-brokers``): a message every 50 ms to whichever broker a name server routes as
  brokerId 0; at SIGTERM, every broker's log is read back.
"""

import argparse
import json
import random
import signal
import socket
import threading
import time

from namesrv.client import BlockingRemotingClient
from namesrv.codec.fastjson import loads as json_loads
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tools.faultlab.records import JsonLines

TIMEOUT = 1.0
#: at SIGTERM: how long the clients get, together, to notice (the longest of their calls takes 5 s), and how long
#: reading one broker's log back may take (connect, then the whole log): the agent's stop is bounded by
#: ``stop_bound(brokers)``, which whoever stops it waits for before a kill (a kill loses the read-back, and the
#: checker would then find every acknowledged message missing)
CLIENTS_STOP_SECONDS = 10.0
READ_BACK_CONNECT_SECONDS = 3.0
READ_BACK_SECONDS = 5.0


def stop_bound(brokers):
    """Seconds a stopping agent may take with ``brokers`` fake brokers to read back."""
    return CLIENTS_STOP_SECONDS + brokers * (READ_BACK_CONNECT_SECONDS + READ_BACK_SECONDS)


def call(address, code, ext=None, body=None, timeout=TIMEOUT):
    host, port = address.rsplit(":", 1)
    try:
        with BlockingRemotingClient(host, int(port), timeout=timeout) as client:
            return client.call(make_request(code, ext, body))
    except OSError:
        return None


class Agent:
    def __init__(self, args):
        self.controllers = [a for a in args.controllers.split(",") if a]
        self.namesrvs = [a for a in args.namesrv.split(",") if a]
        self.brokers = [a for a in args.brokers.split(",") if a]
        self.record = JsonLines(args.out, "kind")
        self.rng = random.Random(args.seed)
        self.stopping = threading.Event()
        self.leader = None

    # -- watching ---------------------------------------------------------------------------------------
    def watch(self):
        while not self.stopping.is_set():
            for address in self.controllers:
                answer = call(address, RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "broker-a"}, timeout=0.5)
                if answer is not None and answer.code == ResponseCode.SUCCESS:
                    sync = json_loads(answer.body) if answer.body else {}
                    self.record("replica_info", controller=address, masterId=_int(answer.ext.get("masterBrokerId")),
                                masterAddress=answer.ext.get("masterAddress"),
                                masterEpoch=_int(answer.ext.get("masterEpoch")),
                                syncStateSet=sync.get("syncStateSet"), syncStateSetEpoch=sync.get("syncStateSetEpoch"))
                meta = call(address, RequestCode.CONTROLLER_GET_METADATA_INFO, timeout=0.5)
                if meta is not None and meta.code == ResponseCode.SUCCESS and meta.ext:
                    if meta.ext.get("isLeader") == "true":
                        self.leader = address
                    self.record("metadata", controller=address, isLeader=meta.ext.get("isLeader") == "true",
                                leaderId=meta.ext.get("controllerLeaderId"))
            for address in self.namesrvs:
                route = call(address, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "LabTopic"}, timeout=0.5)
                if route is not None and route.code == ResponseCode.SUCCESS and route.body:
                    datas = json_loads(route.body).get("brokerDatas") or []
                    for data in datas:
                        addrs = data.get("brokerAddrs") or {}
                        self.record("route", namesrv=address, broker=data.get("brokerName"),
                                    master=addrs.get(0) or addrs.get("0"))
            self.stopping.wait(0.1)

    # -- the linearizability registers -----------------------------------------------------------------------
    def registers(self, worker):
        rng = random.Random(self.rng.random())
        counter = 0
        while self.leader is None and not self.stopping.wait(0.1):
            pass                       # before any leader, every claim would only be "maybe"
        unsure = False
        while not self.stopping.is_set():
            key = "lin-%d" % rng.randrange(2)
            target = self.leader or rng.choice(self.controllers)
            counter += 1
            called = time.monotonic()
            # after a claim whose outcome is unknown, only read until a leader answers again: every
            # unknown outcome doubles what the linearizability search may have to try
            if unsure or rng.random() < 0.5:
                answer = call(target, RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
                              {"clusterName": "LinCluster", "brokerName": key})
                if answer is not None and answer.code == ResponseCode.SUCCESS:
                    self.record("op", key=key, op="read", result=int(answer.ext["nextBrokerId"]), call=called,
                                ret=time.monotonic(), process=worker)
                    unsure = False
                elif answer is not None and answer.code == ResponseCode.CONTROLLER_NOT_LEADER:
                    self.leader = None
            else:
                claim = rng.randrange(1, 6)
                code = "10.0.0.%d:%d;%d" % (worker, counter, int(time.time() * 1000))
                answer = call(target, RequestCode.CONTROLLER_APPLY_BROKER_ID,
                              {"clusterName": "LinCluster", "brokerName": key, "appliedBrokerId": claim,
                               "registerCheckCode": code})
                if answer is None or answer.code == ResponseCode.CONTROLLER_NOT_LEADER:
                    result = None              # may or may not have been committed
                    if answer is not None:
                        self.leader = None
                else:
                    result = answer.code == ResponseCode.SUCCESS
                self.record("op", key=key, op="claim", arg=claim, result=result, call=called,
                            ret=time.monotonic() if result is not None else None, process=worker)
                unsure = result is None
            self.stopping.wait(rng.uniform(0.05, 0.25))

    # -- producing -----------------------------------------------------------------------------------------------
    def master(self):
        for address in self.rng.sample(self.namesrvs, len(self.namesrvs)):
            route = call(address, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "LabTopic"}, timeout=0.5)
            if route is not None and route.code == ResponseCode.SUCCESS and route.body:
                for data in json_loads(route.body).get("brokerDatas") or []:
                    addrs = data.get("brokerAddrs") or {}
                    if addrs.get(0) or addrs.get("0"):
                        return addrs.get(0) or addrs.get("0")
        return None

    def produce(self):
        n = 0
        conn = master = None
        while not self.stopping.is_set():
            if conn is None:
                master = self.master()
                if master is None:
                    self.stopping.wait(0.1)
                    continue
                host, port = master.rsplit(":", 1)
                try:
                    conn = socket.create_connection((host, int(port) + 2), timeout=1.0)
                    conn.settimeout(5.0)
                except OSError:
                    conn = None
                    self.stopping.wait(0.1)
                    continue
            n += 1
            key = "k%d" % n
            sent = time.monotonic()
            try:
                conn.sendall(("SEND %s\n" % key).encode())
                reply = _readline(conn)
            except OSError:
                reply = None
            answered = time.monotonic()
            ok = reply is not None and reply.startswith("OK ")
            self.record("send", key=key, ok=ok, reply=reply, broker=master, call=sent, ret=answered)
            if not ok:
                if conn is not None:
                    conn.close()
                conn = None
            self.stopping.wait(0.05)

    def read_back(self):
        for address in self.brokers:
            host, port = address.rsplit(":", 1)
            try:
                with socket.create_connection((host, int(port) + 2), timeout=READ_BACK_CONNECT_SECONDS) as conn:
                    conn.settimeout(READ_BACK_SECONDS)
                    conn.sendall(b"READ\n")
                    state = json.loads(_readline(conn))
                self.record("log", broker=address, keys=state["keys"], role=state["role"], epoch=state["epoch"])
            except (OSError, ValueError, TypeError):
                self.record("log", broker=address, keys=None, role=None, epoch=None)


def _readline(conn):
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
    return data.decode().strip()


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--controllers", required=True)
    parser.add_argument("--namesrv", required=True)
    parser.add_argument("--brokers", default="")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fake-brokers", action="store_true")
    args = parser.parse_args(argv)
    agent = Agent(args)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    threads = [threading.Thread(target=agent.watch, daemon=True)]
    threads += [threading.Thread(target=agent.registers, args=(w,), daemon=True) for w in (1, 2)]
    if args.fake_brokers:
        threads.append(threading.Thread(target=agent.produce, daemon=True))
    for thread in threads:
        thread.start()
    agent.record("agent_started")
    done.wait()
    agent.stopping.set()
    deadline = time.monotonic() + CLIENTS_STOP_SECONDS   # one bound for all: they stop together
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    if args.fake_brokers:
        agent.read_back()
    agent.record("agent_stopped")


if __name__ == "__main__":
    main()
