"""A read-worker pool that cannot start leaves this process serving, and says so once.

With exclusive listening (the default) the main process only holds the port for its workers. When the pool failed
to start (its sockets' paths too long for an address, before namesrv/unixaddress.py), nothing was logged and
nothing accepted: "boot success", then no answer to anyone.
"""

import pytest_twisted
from twisted.internet.error import CannotListenError
from twisted.logger import formatEvent, globalLogPublisher

from namesrv.readworkers.main.processes import ReadWorkerPool
from namesrv.service import make_service
from tests.config_for import service_config


@pytest_twisted.inlineCallbacks
def test_a_pool_that_cannot_listen_leaves_this_process_accepting_with_one_error(tmp_path, monkeypatch):
    def cannot_listen(pool, *args, **kwargs):
        raise CannotListenError(None, "/somewhere/handoff.sock", "no socket address can name it")
    monkeypatch.setattr(ReadWorkerPool, "start", cannot_listen)
    lines = []

    def observe(event):
        if event.get("log_level") is not None and event["log_level"].name in ("error", "critical"):
            lines.append(formatEvent(event))
    globalLogPublisher.addObserver(observe)
    service = make_service(service_config(tmp_path, routeReadWorkers=1))
    service.startService()
    try:
        port = service.parts.serving.remoting.port
        assert port.accepting                      # not held for workers that will never come
        assert lines == ["namesrv: the route read workers cannot start; this process serves every connection "
                         "itself"], lines
    finally:
        globalLogPublisher.removeObserver(observe)
        yield service.stopService()
