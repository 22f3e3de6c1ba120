"""The default server (`routeReadWorkers=auto`) as a user gets it, on every core and on one."""

import os
import subprocess

import pytest

from namesrv.protocol.codes import ResponseCode
from tests.brokers import register_request, route_request
from tests.integration.server import TWISTD, NamesrvProcess

CPUS = sorted(os.sched_getaffinity(0))


class PinnedNamesrv(NamesrvProcess):
    """A server whose process (and so its read workers) may run only on ``cpus``."""

    def __init__(self, workdir, cpus):
        NamesrvProcess.__init__(self, workdir)
        self.cpus = set(cpus)

    def start(self, timeout=30.0):
        real_popen = subprocess.Popen
        cpus = self.cpus

        def pinned(*args, **kwargs):
            return real_popen(*args, preexec_fn=lambda: os.sched_setaffinity(0, cpus), **kwargs)

        subprocess.Popen = pinned
        try:
            return NamesrvProcess.start(self, timeout)
        finally:
            subprocess.Popen = real_popen


def printed(server):
    out = subprocess.run([TWISTD, "namesrv", "-c", server.config_file, "-p"], env=server.env(), capture_output=True,
                         text=True, timeout=60, preexec_fn=lambda: os.sched_setaffinity(0, server.cpus))
    return dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)


def test_on_one_cpu_the_default_is_one_process(tmp_path):
    server = PinnedNamesrv(tmp_path, CPUS[:1])
    assert printed(server)["routeReadWorkers"] == "0"
    server.start()
    try:
        with server.client() as client:
            assert client.call(register_request("C", "b-one", "127.0.0.1:10911", topics=["One", "One2"])).code == 0
            assert client.call(route_request("One")).code == ResponseCode.SUCCESS
    finally:
        server.stop()
    assert "read worker" not in server.log()


@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 usable CPUs: on one, auto means no worker")
def test_on_every_cpu_the_default_starts_one_fewer_workers_which_answer_reads(tmp_path):
    server = PinnedNamesrv(tmp_path, CPUS)
    workers = len(CPUS) - 1
    assert printed(server)["routeReadWorkers"] == str(workers)
    server.start()
    try:
        with server.client() as broker, server.client() as reader:
            # exclusive listening: this connection was accepted by a worker, the broker's handed over
            assert broker.call(register_request("C", "b-all", "127.0.0.1:10912", topics=["All", "All2"])).code == 0
            assert reader.call(route_request("All")).code == ResponseCode.SUCCESS
    finally:
        server.stop()
    log = server.log()
    for index in range(workers):
        assert "read worker %d listening" % index in log
    assert "read workers stopped" in log and "1 broker connections handed over" in log
