import pytest

from tests.integration.server import NamesrvProcess


@pytest.fixture
def start_server(tmp_path):
    """Start `twistd namesrv` processes with extra properties; all are stopped at the end."""
    started = []

    def start(properties=None, workdir=None, cls=NamesrvProcess, **kwargs):
        server = cls(workdir or tmp_path, properties, **kwargs).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
