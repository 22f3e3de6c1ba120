"""``python -m namesrv.readworkers.worker``: how ReadWorkerPool starts a worker process."""

import sys

from namesrv.readworkers.worker.lifeline import hold_on_to_parent

hold_on_to_parent(sys.argv[1:])   # before the imports below: they take a while

from namesrv.server import eventloop  # noqa: E402

eventloop.install()   # before anything imports the global reactor: ready sockets first come, first served

from namesrv.readworkers.worker.entry import main  # noqa: E402

main()
