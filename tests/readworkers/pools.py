"""A ReadWorkerPool wired to an in-process NamesrvService as service.py wires it (no worker started)."""

from namesrv.readworkers.main.processes import ReadWorkerPool


def pool_for(service, count=1):
    http = service.namedServices.get("prometheus")
    metrics = http.metrics if http is not None else None
    return ReadWorkerPool(count, routes=service.routes, kv=service.kv, config=service.config,
                          registry=service.registry, factory=service.factory,
                          priority=service.chain.priority, started=service.context.started,
                          reactor=service.reactor, scheduler=service.context.scheduler, tls_factory=service.tls.factory if service.tls else None,
                          metrics=metrics, proxy_factory=service.proxy)
