"""``python -m namesrv.readworkers.worker``: how ReadWorkerPool starts a worker process."""

import faulthandler
import signal
import sys

# A worker that does not stop names itself, even while it imports: the main process asks for its stacks
# (SIGUSR1: every thread's, on stderr, which the main process logs) before it kills it.
faulthandler.register(signal.SIGUSR1, all_threads=True)

from namesrv.readworkers.worker.lifeline import hold_on_to_parent  # noqa: E402

hold_on_to_parent(sys.argv[1:])   # before the imports below: they take a while

from namesrv.server import eventloop  # noqa: E402

eventloop.install()   # before anything imports the global reactor: ready sockets first come, first served

from namesrv.readworkers.worker.entry import main  # noqa: E402

main()
