"""A fleet of controllers and epoch brokers that the admin tests share (a module fixture)."""

import json
import socket
import struct
import threading

import pytest

from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from tests.brokers import register_request
from tests.controllerbrokers import ControllerBroker, embedded_controller
from tests.integration.server import NamesrvProcess, free_port


EPOCH_CACHE = {"clusterName": "ClusterE", "brokerName": "broker-e", "brokerId": 1, "maxOffset": 4096,
               "epochList": [{"epoch": 1, "startOffset": 0, "endOffset": 1024},
                             {"epoch": 2, "startOffset": 1024, "endOffset": 9223372036854775807}]}


class EpochBroker:
    """A broker's remoting port that answers GET_BROKER_EPOCH_CACHE (1007) and nothing else."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.asked = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            while True:
                head = conn.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    return
                request = decode_frame(conn.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL))
                self.asked.append(request.code)
                if request.code == RequestCode.GET_BROKER_EPOCH_CACHE:
                    answer = request.make_response(body=json.dumps(EPOCH_CACHE).encode())
                else:
                    answer = request.make_response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "not here")
                conn.sendall(encode_frame(answer))

    def close(self):
        self.listener.close()


def unused_address():
    return "127.0.0.1:%d" % free_port()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """broker-a: 1 master, 2 in sync; broker-c: 1 master, 2 in sync (for electMaster); broker-d: 1
    master (for cleanBrokerMetadata); broker-e in the name server only, answering 1007."""
    controller_port = free_port()
    workdir = tmp_path_factory.mktemp("controller-admin")
    proc = NamesrvProcess(workdir, embedded_controller(workdir, controller_port)).start()
    brokers, epoch_broker, namesrv = {}, EpochBroker(), proc.client()
    try:
        for name in ("broker-a", "broker-c", "broker-d"):
            for _ in range(1 if name == "broker-d" else 2):
                broker = ControllerBroker(controller_port, "ClusterA", name, unused_address())
                broker.start()
                brokers[(name, broker.broker_id)] = broker
            if name != "broker-d":
                brokers[(name, 1)].sync({1, 2}, 1)
        # a first registration with one topic is refused (5.x's guard): two topics each
        for cluster, name, address, broker_id in [("ClusterA", "broker-a", brokers[("broker-a", 1)].address, 0),
                                                  ("ClusterA", "broker-a", brokers[("broker-a", 2)].address, 1),
                                                  ("ClusterA", "broker-c", brokers[("broker-c", 1)].address, 0),
                                                  ("ClusterE", "broker-e", epoch_broker.address, 0)]:
            answer = namesrv.call(register_request(cluster, name, address, broker_id, ["TopicA", "TopicB"]))
            assert answer.code == ResponseCode.SUCCESS, answer.remark
        yield {"proc": proc, "a": "127.0.0.1:%d" % controller_port, "n": "127.0.0.1:%d" % proc.port,
               "brokers": brokers, "epoch_broker": epoch_broker}
    finally:
        namesrv.close()
        epoch_broker.close()
        for broker in brokers.values():
            broker.close()
        proc.stop()
