"""``python -m namesrv.readworkers.worker``: how ReadWorkerPool starts a worker process."""

from namesrv.readworkers.worker.entry import main

main()
