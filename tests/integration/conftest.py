import pytest

from tests.integration.server import NamesrvProcess


@pytest.fixture
def namesrv(tmp_path):
    """A started `twistd namesrv` with its own port, KV file and snapshot in tmp_path."""
    server = NamesrvProcess(tmp_path).start()
    yield server
    server.stop()


@pytest.fixture
def make_namesrv(tmp_path):
    """Start servers with custom properties; all are stopped at the end."""
    started = []

    def make(properties=None, workdir=None, **kwargs):
        server = NamesrvProcess(workdir or tmp_path, properties, **kwargs)
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()
