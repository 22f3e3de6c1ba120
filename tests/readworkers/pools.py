"""A ReadWorkerPool wired to an in-process NamesrvService as service.py wires it (no worker started)."""

from namesrv.readworkers.main.processes import ReadWorkerPool


def pool_for(service, count=1):
    security = service.security
    return ReadWorkerPool(count, routes=service.routes, kv=service.kv, config=service.config,
                          registry=service.registry, factory=service.factory, holds=security.dispatcher.holds,
                          started=service.context.started, reactor=service.reactor,
                          tls_factory=security.tls_factory, metrics=security.metrics)
