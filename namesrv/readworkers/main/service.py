"""The read workers as a child service of the NameServer: they start once its port listens
(they inherit that socket) and stop with it."""

from twisted.application import service


class ReadWorkersService(service.Service):
    """Runs ``pool`` (a ReadWorkerPool): ``serve`` when the port listens, ``stop`` with the server.

    ``stopService`` fires when every worker has ended: their last request counts have arrived.
    """

    name = "read workers"

    def __init__(self, pool):
        self.pool = pool

    def serve(self, port_number, listen_socket, on_listening=None, on_uncovered=None):
        self.pool.start(port_number, listen_socket, on_listening=on_listening, on_uncovered=on_uncovered)

    def stopService(self):
        service.Service.stopService(self)
        return self.pool.stop()
