"""Client libraries that are not Java read routes from a name server with ``aclEnable=true``, signing with a
read-only account's session credentials (issue 54, "Real peers"): the RocketMQ C++ client (librocketmq, as
PyPI's ``rocketmq`` 0.4.4 wheel ships it) and ali-ons (npm). Both sign as ``AclClientRPCHook`` does, with their
``OnsChannel`` field among the signed ones. Without credentials, or with a wrong secret, the read is refused.

Each skips, saying how to install it, where it is missing: ``make test`` installs ``rocketmq`` on x86_64 Linux
(the test extras); .ci/run installs ali-ons into .cache/node (or set ALI_ONS_NODE_MODULES to a node_modules
holding it).
"""

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

from namesrv.protocol.codes import ResponseCode
from tests.brokers import register_request
from tests.integration.server import REPO
from tests.security.live import SourcedClient

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENTS = os.path.join(os.path.dirname(HERE), "clients")
ACL = """
accounts:
  - {accessKey: readOnly1, secretKey: read-only-secret-1}
  - {accessKey: opsAdmin10, secretKey: ops-admin-secret-10, admin: "true"}
"""
READER = ("readOnly1", "read-only-secret-1")
TOPIC = "ClientTopic"


def ali_ons_modules():
    path = os.environ.get("ALI_ONS_NODE_MODULES") or os.path.join(REPO, ".cache", "node", "node_modules")
    if shutil.which("node") is None:
        pytest.skip("ali-ons needs node on PATH (Debian: apt-get install nodejs npm)")
    if not os.path.isfile(os.path.join(path, "ali-ons", "lib", "mq_client_api.js")):
        pytest.skip("ali-ons is not installed in %s: npm install --prefix .cache/node --no-save ali-ons@3.12.0 "
                    "(.ci/run does), or set ALI_ONS_NODE_MODULES" % path)
    return path


def cpp_client():
    if importlib.util.find_spec("rocketmq") is None or importlib.util.find_spec("rocketmq.ffi") is None:
        pytest.skip("the C++ client comes with PyPI's rocketmq 0.4.4 wheel (librocketmq, x86_64 Linux): "
                    "pip install rocketmq==0.4.4 (make test installs it there)")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from tests.integration.server import NamesrvProcess
    workdir = tmp_path_factory.mktemp("clients")
    (workdir / "plain_acl.yml").write_text(ACL)
    process = NamesrvProcess(workdir, {"aclEnable": "true", "aclFile": str(workdir / "plain_acl.yml"),
                                       "brokerAllowedAddresses": "127.0.0.1"}).start()
    # a 4.9-style broker, unsigned through brokerAllowedAddresses, stays connected while the clients read
    broker = SourcedClient(process.port)
    answer = broker.call(register_request("ClusterC", "broker-c", "127.0.0.1:10931", topics=[TOPIC, "Other"]))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    process.home = workdir
    yield process
    broker.close()
    process.stop()


def run(command, home, env=None):
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=str(home),
                          env=dict(os.environ, HOME=str(home), **(env or {})))
    lines = [line for line in done.stdout.splitlines() if line.startswith(("QUEUES", "ERROR"))]
    return lines[-1] if lines else "no answer line: %s %s" % (done.stdout[-2000:], done.stderr[-2000:])


def read_queues(line):
    """The queues a client found in the route (its ``QUEUES n`` line), 0 when it found none (the C++ client
    answers a refused read with an empty list, ali-ons with an error)."""
    return int(line.split()[1]) if line.startswith("QUEUES ") else 0


def cases(server):
    namesrv = "127.0.0.1:%d" % server.port
    return namesrv, [("signed", READER, True), ("unsigned", None, False),
                     ("wrong secret", (READER[0], "not-the-secret-9"), False)]


def test_the_cpp_client_reads_a_route_with_a_read_only_account(server):
    cpp_client()
    namesrv, signings = cases(server)
    for label, credentials, allowed in signings:
        line = run([sys.executable, os.path.join(CLIENTS, "cpp_route.py"), namesrv, TOPIC, *(credentials or ())],
                   server.home, {"PYTHONPATH": REPO})
        assert bool(read_queues(line)) == allowed, (label, line)
    assert "refused GET_ROUTEINFO_BY_TOPIC (105)" in server.log()


def test_ali_ons_reads_a_route_with_a_read_only_account(server):
    modules = ali_ons_modules()
    namesrv, signings = cases(server)
    for label, credentials, allowed in signings:
        line = run(["node", os.path.join(CLIENTS, "ali_ons_route.js"), namesrv, TOPIC, *(credentials or ())],
                   server.home, {"NODE_PATH": modules})
        assert bool(read_queues(line)) == allowed, (label, line)
