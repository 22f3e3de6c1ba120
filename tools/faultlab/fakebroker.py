"""A RocketMQ 5.x broker in controller mode, small enough to read and real enough to lose messages
if the controllers let it: the fault lab's broker where no Java peer is installed (CI).

    python -m tools.faultlab.fakebroker --name broker-a --addr 10.9.0.11:20911 \\
        --controllers 10.9.0.1:9878,10.9.0.2:9878 --namesrv 10.9.0.1:9876,10.9.0.2:9876 --events FILE --data DIR

Toward the controllers and the name servers it speaks the real frames, as ReplicasManager does:
an id (CONTROLLER_GET_NEXT_BROKER_ID, CONTROLLER_APPLY_BROKER_ID), CONTROLLER_REGISTER_BROKER, an
election (CONTROLLER_ELECT_MASTER), heartbeats to the controller leader, GET_REPLICA_INFO every
half second, NOTIFY_BROKER_ROLE_CHANGED on its own port, CONTROLLER_ALTER_SYNC_STATE_SET as a
master, and REGISTER_BROKER to every name server (brokerId 0 as master).

Between brokers and with the lab's producer it speaks a line protocol of its own (port + 1: HA,
port + 2: produce), with Java's rules (``allAckInSyncStateSet=true``):
- a master answers OK to a message only once every member of its in-sync set (as the controller
  last confirmed it) holds it;
- a slave copies the master's log after cutting its own back to what the two have in common (so
  a message the old master never had acknowledged can go, an acknowledged one cannot, as long as
  the controllers only ever elect from the in-sync set);
- a master shrinks the in-sync set of a slave that fell behind, and grows it when the slave has
  caught up, each time through the controller and with its master epoch (a fenced master fails).

Its log survives a kill -9 (one fsynced line per message). Everything it does is written to
``--events`` as JSON lines with ``time.monotonic()`` stamps (the same clock in every process of
the machine), for the lab's checkers.
"""

import argparse
import json
import os
import random
import socket
import threading
import time
import zlib

from namesrv.client import BlockingRemotingClient
from namesrv.codec.fastjson import loads as json_loads
from namesrv.protocol.codec import decode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.protocol.framing import FrameReader
from tools.faultlab.records import JsonLines

#: two topics: a 5.x name server takes a one-topic registration from a broker it does not know for an
#: incremental update and refuses it
TOPICS = ("LabTopic", "LabTopicB")
CATCH_UP_SECONDS = 3.0
ACK_TIMEOUT = 3.0


class MessageLog:
    """Message keys with the master epoch they were written in; one fsynced line per change."""

    def __init__(self, directory):
        os.makedirs(directory, exist_ok=True)
        self.path = os.path.join(directory, "messages.log")
        self.entries = []
        try:
            with open(self.path) as f:
                for line in f:
                    if line.endswith("\n"):
                        entry = json.loads(line)
                        if entry[0] == "truncate":
                            del self.entries[entry[1]:]
                        else:
                            self.entries.append((entry[0], entry[1]))
        except FileNotFoundError:
            pass
        self.file = open(self.path, "a")

    def _write(self, record):
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        os.fsync(self.file.fileno())

    def append(self, key, epoch):
        self.entries.append((key, epoch))
        self._write([key, epoch])
        return len(self.entries)

    def truncate(self, length):
        if length < len(self.entries):
            del self.entries[length:]
            self._write(["truncate", length])

    def keys(self):
        return [key for key, _ in self.entries]


def _lines(sock):
    buffer = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line.decode()


def _call(channels, address, request, timeout=1.0):
    """``request`` on the kept-open channel to ``address`` (opened, or opened again after a failure)."""
    client = channels.get(address)
    if client is None:
        host, port = address.rsplit(":", 1)
        client = channels[address] = BlockingRemotingClient(host, int(port), timeout=timeout)
    try:
        return client.call(request)
    except OSError:
        channels.pop(address, None)
        client.close()
        raise


def _serve(host, port, handler):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, port))
    server.listen(64)

    def loop():
        while True:
            conn, _ = server.accept()
            threading.Thread(target=handler, args=(conn,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


class FakeBroker:
    def __init__(self, args):
        self.name, self.cluster = args.name, args.cluster
        self.host, port = args.addr.rsplit(":", 1)
        self.port = int(port)
        self.address = args.addr
        self.controllers = [a for a in args.controllers.split(",") if a]
        self.namesrvs = [a for a in args.namesrv.split(",") if a]
        self.events = JsonLines(args.events, "event")
        self.data = args.data
        self.log = MessageLog(args.data)
        self.lock = threading.Condition()
        self.broker_id = None
        self.role = "starting"
        self.master_id = None
        self.master_address = None
        self.master_epoch = 0
        self.sync_set = set()
        self.sync_epoch = 0
        self.acked = {}          # slave id -> (log length it holds, when it last caught up)
        self.leader = None       # the controller that last answered as leader
        self.check_code = "%s;%d" % (self.address, int(time.time() * 1000))
        self._became_master = 0.0
        self._channels = {}
        self._namesrv_channels = {}

    # -- the controller -------------------------------------------------------------------------------
    def ask(self, code, ext=None, body=None, leader_only=True):
        """Ask the controller leader (trying each controller); None when nobody answers as leader.

        One connection per controller, kept open as a broker's channel is: a controller takes a
        closed channel for the broker's death."""
        order = ([self.leader] if self.leader else []) + [c for c in self.controllers if c != self.leader]
        for address in order:
            try:
                answer = _call(self._channels, address, make_request(code, ext, body))
            except OSError:
                continue
            if answer.code == ResponseCode.CONTROLLER_NOT_LEADER and leader_only:
                continue
            self.leader = address
            return answer
        self.leader = None
        return None

    def start(self):
        where = {"clusterName": self.cluster, "brokerName": self.name}
        meta = os.path.join(self.data, "broker-id.json")
        if os.path.exists(meta):                 # a restart keeps its id, as a real broker's metadata file
            with open(meta) as f:
                saved = json.load(f)
            self.broker_id, self.check_code = saved["brokerId"], saved["checkCode"]
        while self.broker_id is None:
            answer = self.ask(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, where)
            if answer is not None and answer.code == ResponseCode.SUCCESS:
                candidate = int(answer.ext["nextBrokerId"])
                applied = self.ask(RequestCode.CONTROLLER_APPLY_BROKER_ID,
                                   dict(where, appliedBrokerId=candidate, registerCheckCode=self.check_code))
                if applied is not None and applied.code == ResponseCode.SUCCESS:
                    self.broker_id = candidate
                    with open(meta + ".tmp", "w") as f:
                        json.dump({"brokerId": candidate, "checkCode": self.check_code}, f)
                        f.flush()
                        os.fsync(f.fileno())
                    os.replace(meta + ".tmp", meta)
                    break
            time.sleep(0.3)
        self.events("broker_id", broker=self.name, brokerId=self.broker_id, address=self.address)
        self.beat()
        while True:
            answer = self.ask(RequestCode.CONTROLLER_REGISTER_BROKER,
                              dict(where, brokerId=self.broker_id, brokerAddress=self.address))
            if answer is not None and answer.code == ResponseCode.SUCCESS:
                break
            time.sleep(0.3)
        self.elect()
        for target in (self.controller_loop, self.namesrv_loop, self.ha_client_loop):
            threading.Thread(target=target, daemon=True).start()

    def beat(self):
        """To every controller, as 5.3.3's ReplicasManager.sendHeartbeatToController: each keeps its own
        liveness table, so a new leader knows who is alive at once."""
        request = make_request(RequestCode.BROKER_HEARTBEAT, {
            "clusterName": self.cluster, "brokerName": self.name, "brokerAddr": self.address,
            "brokerId": self.broker_id, "heartbeatTimeoutMills": 6000, "epoch": self.master_epoch,
            "maxOffset": len(self.log.entries), "confirmOffset": len(self.log.entries), "electionPriority": 0})
        for address in self.controllers:
            try:
                _call(self._channels, address, request)
            except OSError:
                pass

    def elect(self):
        answer = self.ask(RequestCode.CONTROLLER_ELECT_MASTER, {
            "clusterName": self.cluster, "brokerName": self.name, "brokerId": self.broker_id,
            "designateElect": "false"})
        if answer is not None and answer.ext and answer.ext.get("masterEpoch"):
            self.learn(answer.ext, None, "elect")      # its body is ElectMasterResponseBody, not the in-sync set

    def controller_loop(self):
        last_beat = 0.0
        while True:
            now = time.monotonic()
            if now - last_beat >= 1.0:
                self.beat()
                last_beat = now
            answer = self.ask(RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": self.name})
            if answer is not None and answer.code == ResponseCode.SUCCESS:
                self.learn(answer.ext or {}, answer.body, "replica_info")
                if self.role == "master":
                    self.tend_sync_set()
                elif self.master_id is None:
                    self.elect()
            time.sleep(0.5)

    def learn(self, ext, body, source):
        """A master and epoch from the controller (an answer or a notification)."""
        epoch = int(ext.get("masterEpoch") or 0)
        master_id = int(ext["masterBrokerId"]) if ext.get("masterBrokerId") not in (None, "") else None
        sync = json_loads(body) if body else None
        if not isinstance(sync, dict) or "syncStateSetEpoch" not in sync:
            sync = None
        with self.lock:
            if epoch < self.master_epoch:
                return
            if sync is not None and (epoch > self.master_epoch or int(sync["syncStateSetEpoch"]) > self.sync_epoch):
                self.sync_set = set(sync.get("syncStateSet") or [])
                self.sync_epoch = int(sync["syncStateSetEpoch"])
            if epoch == self.master_epoch and master_id == self.master_id:
                return
            self.master_epoch, self.master_id = epoch, master_id
            self.master_address = ext.get("masterAddress")
            self.role = "master" if master_id == self.broker_id else ("slave" if master_id is not None else "orphan")
            if self.role == "master":
                self.acked = {}
                self._became_master = time.monotonic()
            self.lock.notify_all()
        self.events("role", broker=self.name, brokerId=self.broker_id, role=self.role, epoch=epoch,
                    masterId=master_id, source=source, syncStateSet=sorted(self.sync_set),
                    syncStateSetEpoch=self.sync_epoch)

    def tend_sync_set(self):
        """As master: shrink the in-sync set of a lagging slave, grow it with one that caught up."""
        now = time.monotonic()
        with self.lock:
            members = set(self.sync_set)
            wanted = {self.broker_id}
            for slave, (held, since) in self.acked.items():
                if held >= len(self.log.entries) or now - since < CATCH_UP_SECONDS:
                    wanted.add(slave)
            for slave in members - wanted - {self.broker_id}:
                if slave not in self.acked and now - self._master_since() < CATCH_UP_SECONDS:
                    wanted.add(slave)          # a new master gives its slaves time to connect
            epoch, sync_epoch = self.master_epoch, self.sync_epoch
        if wanted == members:
            return
        body = json.dumps({"syncStateSet": sorted(wanted), "syncStateSetEpoch": sync_epoch}).encode()
        answer = self.ask(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, {
            "brokerName": self.name, "masterBrokerId": self.broker_id, "masterEpoch": epoch}, body)
        if answer is not None and answer.code == ResponseCode.SUCCESS:
            with self.lock:
                if self.master_epoch == epoch:
                    self.sync_set = wanted
                    self.sync_epoch = int(answer.ext["newSyncStateSetEpoch"])
                    self.lock.notify_all()
            self.events("sync_set", broker=self.name, brokerId=self.broker_id, epoch=epoch,
                        syncStateSet=sorted(wanted), syncStateSetEpoch=self.sync_epoch)
        elif answer is not None:
            self.events("sync_set_refused", broker=self.name, code=answer.code, remark=answer.remark)

    def _master_since(self):
        return self._became_master

    # -- NOTIFY_BROKER_ROLE_CHANGED on the broker's own port ------------------------------------------------
    def notify_server(self, conn):
        reader = FrameReader()
        with conn:
            conn.settimeout(10)
            try:
                while True:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data = reader.feed(chunk)
                    if data is None:
                        continue
                    for raw in reader.frames(data):
                        frame = decode_frame(raw)
                        if frame.code == RequestCode.NOTIFY_BROKER_ROLE_CHANGED:
                            self.events("notified", broker=self.name, brokerId=self.broker_id, ext=frame.ext)
                            self.learn(frame.ext or {}, frame.body, "notify")
                    reader.keep_rest()
            except (OSError, ValueError):
                pass

    # -- the name servers ---------------------------------------------------------------------------------
    def namesrv_loop(self):
        counter = 0
        while True:
            counter += 1
            with self.lock:
                role = self.role
                broker_id = 0 if role == "master" else self.broker_id
                epoch = self.master_epoch
            # stateVersion: the master epoch, as a 5.3.3 broker's DataVersion.nextVersion(masterEpoch) writes it
            body = json.dumps({"filterServerList": [], "topicConfigSerializeWrapper": {
                "dataVersion": {"counter": counter, "timestamp": int(time.time() * 1000), "stateVersion": epoch},
                "topicConfigTable": {name: {"order": False, "perm": 6, "readQueueNums": 1,
                                            "topicFilterType": "SINGLE_TAG", "topicName": name, "topicSysFlag": 0,
                                            "writeQueueNums": 1} for name in TOPICS}}},
                              separators=(",", ":")).encode()
            ext = {"brokerName": self.name, "brokerAddr": self.address, "clusterName": self.cluster,
                   "haServerAddr": "%s:%d" % (self.host, self.port + 1), "brokerId": str(broker_id),
                   "compressed": "false", "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF),
                   "enableActingMaster": "false"}
            for address in self.namesrvs:
                try:
                    _call(self._namesrv_channels, address, make_request(RequestCode.REGISTER_BROKER, ext, body=body))
                except OSError:
                    pass
            # every second, and at once after a role change, as a 5.3.3 broker registers from changeToMaster
            # and changeToSlave (without waiting for its period)
            with self.lock:
                self.lock.wait_for(lambda: self.role != role, timeout=1.0)

    # -- HA: the master's log to its slaves -------------------------------------------------------------------
    def ha_server(self, conn):
        """A slave: it sends its keys, we answer how much of them to keep, then stream the rest as it acks."""
        with conn:
            conn.settimeout(CATCH_UP_SECONDS)
            lines = _lines(conn)
            try:
                hello = json.loads(next(lines))
                slave, its_keys = int(hello["brokerId"]), hello["keys"]
                with self.lock:
                    if self.role != "master" or hello["epoch"] > self.master_epoch:
                        return
                    mine = self.log.keys()
                common = 0
                while common < min(len(mine), len(its_keys)) and mine[common] == its_keys[common]:
                    common += 1
                conn.sendall(("%d\n" % common).encode())
                sent = held = common
                with self.lock:
                    self._record_ack(slave, held)
                while True:
                    with self.lock:
                        while sent >= len(self.log.entries) and self.role == "master":
                            self._record_ack(slave, held)      # caught up, and still here
                            self.lock.wait(0.2)
                        if self.role != "master":
                            return
                        batch = self.log.keys()[sent:]
                    conn.sendall("".join(k + "\n" for k in batch).encode())
                    sent += len(batch)
                    while held < sent:
                        held = int(next(lines))
                        with self.lock:
                            self._record_ack(slave, held)
                            self.lock.notify_all()
            except (OSError, StopIteration, ValueError, KeyError):
                return

    def _record_ack(self, slave, held):
        since = self.acked.get(slave, (0, 0.0))[1]
        if held >= len(self.log.entries):
            since = time.monotonic()
        self.acked[slave] = (held, since)

    def ha_client_loop(self):
        while True:
            with self.lock:
                role, master = self.role, self.master_address
            if role != "slave" or not master:
                time.sleep(0.2)
                continue
            host, port = master.rsplit(":", 1)
            try:
                with socket.create_connection((host, int(port) + 1), timeout=2.0) as conn:
                    conn.settimeout(CATCH_UP_SECONDS + 2)
                    with self.lock:
                        hello = {"brokerId": self.broker_id, "epoch": self.master_epoch, "keys": self.log.keys()}
                    conn.sendall((json.dumps(hello) + "\n").encode())
                    lines = _lines(conn)
                    keep = int(next(lines))
                    with self.lock:
                        if keep < len(self.log.entries):
                            self.events("truncated", broker=self.name, brokerId=self.broker_id,
                                        dropped=self.log.keys()[keep:])
                        self.log.truncate(keep)
                    for key in lines:
                        with self.lock:
                            if self.role != "slave" or self.master_address != master:
                                break
                            self.log.append(key, self.master_epoch)
                            held = len(self.log.entries)
                        conn.sendall(("%d\n" % held).encode())
            except (OSError, StopIteration, ValueError):
                time.sleep(0.2)

    # -- the producer ------------------------------------------------------------------------------------------
    def produce_server(self, conn):
        with conn:
            try:
                for line in _lines(conn):
                    command, _, key = line.partition(" ")
                    if command == "READ":
                        with self.lock:
                            conn.sendall((json.dumps({"keys": self.log.keys(), "role": self.role,
                                                      "epoch": self.master_epoch}) + "\n").encode())
                    elif command == "SEND":
                        conn.sendall((self.send(key) + "\n").encode())
            except OSError:
                return

    def send(self, key):
        with self.lock:
            if self.role != "master":
                return "FAIL not-master"
            epoch = self.master_epoch
            index = self.log.append(key, epoch)
            self.lock.notify_all()                 # the HA threads stream it to the slaves now
            deadline = time.monotonic() + ACK_TIMEOUT
            while True:
                if self.role != "master" or self.master_epoch != epoch:
                    return "FAIL deposed"
                waiting = [s for s in self.sync_set if s != self.broker_id and self.acked.get(s, (0,))[0] < index]
                if not waiting:
                    self.events("ack", broker=self.name, brokerId=self.broker_id, key=key, epoch=epoch,
                                syncStateSet=sorted(self.sync_set))
                    return "OK " + key
                left = deadline - time.monotonic()
                if left <= 0:
                    return "FAIL timeout"
                self.lock.wait(min(left, 0.1))

    def run(self):
        _serve(self.host, self.port, self.notify_server)
        _serve(self.host, self.port + 1, self.ha_server)
        _serve(self.host, self.port + 2, self.produce_server)
        self.events("started", broker=self.name, address=self.address, held=len(self.log.entries))
        self.start()
        while True:
            time.sleep(3600)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="broker-a")
    parser.add_argument("--cluster", default="LabCluster")
    parser.add_argument("--addr", required=True, help="host:port (port+1 HA, port+2 produce)")
    parser.add_argument("--controllers", required=True)
    parser.add_argument("--namesrv", required=True)
    parser.add_argument("--events", required=True)
    parser.add_argument("--data", required=True)
    args = parser.parse_args(argv)
    random.seed()
    FakeBroker(args).run()


if __name__ == "__main__":
    main()
