"""Read workers under a $TMPDIR too long for a socket address.

The pool's sockets live in ``$TMPDIR/namesrv-readers-XXXXXXXX/``. With a TMPDIR of about 70 bytes or more,
``handoff.sock`` passed the 107 bytes a UNIX socket address holds: the pool could not start, nothing was
logged, and with exclusive listening (the default) the main process held the port for workers that never
came. The server said "boot success" and answered nothing. Now the sockets are bound and reached through
their directory's descriptor (namesrv/unixaddress.py), and a pool that cannot start leaves this process
serving, with one error line.
"""

import os

from namesrv.protocol.codes import ResponseCode
from namesrv.readworkers.channel.scratch import PREFIX
from tests.brokers import register_request, route_request
from tests.integration.server import NamesrvProcess

#: how long the pool's socket paths get under ``tmpdir``: "/namesrv-readers-" + 8 + "/handoff.sock"
SOCKET_TAIL = len("/" + PREFIX + "x" * 8 + "/handoff.sock")


class TmpdirNamesrv(NamesrvProcess):
    def __init__(self, workdir, tmpdir, properties):
        NamesrvProcess.__init__(self, workdir, properties)
        self.tmpdir = tmpdir

    def env(self):
        return dict(NamesrvProcess.env(self), TMPDIR=self.tmpdir)


def long_tmpdir(tmp_path):
    """A directory under ``tmp_path`` whose pool sockets would be 120 bytes long."""
    name = "t" * max(1, 120 - SOCKET_TAIL - len(str(tmp_path)) - 1)
    path = tmp_path / name
    path.mkdir()
    assert len(os.fsencode(str(path))) + SOCKET_TAIL > 107
    return str(path)


def test_a_worker_answers_reads_and_takes_a_broker_under_a_long_tmpdir(tmp_path):
    tmpdir = long_tmpdir(tmp_path)
    server = TmpdirNamesrv(tmp_path, tmpdir, {"routeReadWorkers": "1"})
    server.start()
    try:
        with server.client() as broker, server.client() as reader:
            assert broker.call(register_request("C", "b-long", "127.0.0.1:10913", topics=["Long", "Long2"])).code == 0
            assert reader.call(route_request("Long")).code == ResponseCode.SUCCESS
        assert [name for name in os.listdir(tmpdir) if name.startswith(PREFIX)]   # the pool's directory is there
    finally:
        server.stop()
    log = server.log()
    assert "read worker 0 listening" in log and "1 broker connections handed over" in log, log
    assert "cannot start" not in log
    assert not [name for name in os.listdir(tmpdir) if name.startswith(PREFIX)]   # and removed at the stop
