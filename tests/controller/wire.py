"""Fake 5.x brokers over real sockets: the controller's codes as a broker sends them, and a listening
port where NOTIFY_BROKER_ROLE_CHANGED arrives."""

import socket
import struct
import threading

from namesrv.client import BlockingRemotingClient, recv_until_closed
from namesrv.controller.replication.identity import create_group_keys
from namesrv.protocol.codec import decode_frame
from namesrv.protocol.codes import RequestCode
from namesrv.protocol.command import make_request
from tests.integration.server import free_port


def controller_ports(count):
    """``count`` distinct free ports on 127.0.0.1 for controllers (Raft shares each controller's port)."""
    return [free_port() for _ in range(count)]   # never the same one twice


def controller_properties(tmp_path, port, peers=None, self_id="n0"):
    """A name server's properties with its embedded controller listening on ``port`` (one member unless
    ``peers``), and no read workers."""
    return {"enableControllerInNamesrv": "true", "controllerDLegerGroup": "groupW",
            "controllerDLegerPeers": peers or "n0-127.0.0.1:%d" % port, "controllerDLegerSelfId": self_id,
            "controllerStorePath": str(tmp_path / ("ctrl-" + self_id)), "routeReadWorkers": "0"}


def secret_file(directory, secret=b"a-group-secret-of-32-bytes-long!"):
    """A controllerPeerSecretFile (mode 600) holding ``secret``; its path."""
    path = directory / "controller.secret"
    path.write_bytes(secret + b"\n")
    path.chmod(0o600)
    return str(path)


def member_keys(directory, ids=("n0", "n1", "n2")):
    """A private key per member (``<id>.key``) and the controllerMembersFile listing their public keys, in
    ``directory``; the members file's path (the keys' default place is beside it)."""
    return create_group_keys(str(directory), ids)


def group_credentials(directory, ids=("n0", "n1", "n2")):
    """The properties several controllers need: the group's secret and the members' keys."""
    return {"controllerPeerSecretFile": secret_file(directory), "controllerMembersFile": member_keys(directory, ids)}


class NotificationPort:
    """A broker's listening port: collects the frames controllers send to it (in a thread)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.received = []
        self.arrived = threading.Event()
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def _serve(self):
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(5)
                data = recv_until_closed(conn)
            while len(data) >= 4:
                (length,) = struct.unpack(">I", data[:4])
                self.received.append(decode_frame(data[4:4 + length]))
                data = data[4 + length:]
            self.arrived.set()

    def close(self):
        self._stop = True
        self.thread.join(2)
        self.sock.close()


class WireBroker:
    def __init__(self, controller_port, name="broker-a", cluster="ClusterW"):
        self.notifications = NotificationPort()
        self.address = self.notifications.address
        self.name, self.cluster = name, cluster
        self.client = BlockingRemotingClient("127.0.0.1", controller_port, timeout=10)
        self.broker_id = None

    def call(self, code, ext=None, body=None):
        return self.client.call(make_request(code, ext=ext, body=body))

    def start(self):
        answer = self.call(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, {"clusterName": self.cluster,
                                                                        "brokerName": self.name})
        self.broker_id = int(answer.ext["nextBrokerId"])
        applied = self.call(RequestCode.CONTROLLER_APPLY_BROKER_ID, {
            "clusterName": self.cluster, "brokerName": self.name, "appliedBrokerId": self.broker_id,
            "registerCheckCode": "%s;1700000000000" % self.address})
        assert applied.code == 0, applied
        self.beat()
        return self.call(RequestCode.CONTROLLER_REGISTER_BROKER, {
            "clusterName": self.cluster, "brokerName": self.name, "brokerId": self.broker_id,
            "brokerAddress": self.address})

    def beat(self):
        self.client.send(make_request(RequestCode.BROKER_HEARTBEAT, ext={
            "clusterName": self.cluster, "brokerAddr": self.address, "brokerName": self.name,
            "brokerId": self.broker_id, "heartbeatTimeoutMills": 10000}, oneway=True))

    def elect(self):
        return self.call(RequestCode.CONTROLLER_ELECT_MASTER, {
            "clusterName": self.cluster, "brokerName": self.name, "brokerId": self.broker_id,
            "designateElect": "false"})

    def die(self):
        self.client.close()

    def close(self):
        self.client.close()
        self.notifications.close()
