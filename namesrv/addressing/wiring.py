"""The address service for one server: the model, the prober, the metrics, and ``/rocketmq`` on the Prometheus port.

It is served where ``/health`` is: the port a load balancer or an operator already reaches over
HTTP. Clients whose ``rocketmq.namesrv.domain`` names no port ask port 8080, so an operator who
wants a bare host name there sets ``prometheusListenPort=8080``.

Read at start: whether it is on, the list, the subgroups and the probe settings. None of them is a
runtime property (namesrv/config/runtime.py): whoever may change the list may send every client to a
server of their choosing, so the network never does. ``config_changed`` follows an in-process change.
"""

from twisted.logger import Logger

from namesrv.addressing.liveness import AddressLiveness
from namesrv.addressing.namesrvlist import parse_namesrv_addr, parse_subgroups
from namesrv.addressing.prober import AddressProber
from namesrv.addressing.web import AddressResource, AddressServiceOff, RequestRate

log = Logger()

PATH = b"rocketmq"


class AddressService:
    """The parts, and the configuration they follow."""

    def __init__(self, config, registry, clock, reactor):
        from namesrv.addressing.metrics import AddressServiceMetrics   # prometheus-client: only when on
        self.config = config
        self.subgroups = parse_subgroups(config.addressServiceSubgroups)
        addresses = parse_namesrv_addr(config.addressServiceNamesrvAddr)
        self.liveness = AddressLiveness(addresses, clock.seconds(), config.addressServiceDownAfterMillis / 1000.0,
                                        config.addressServiceUpAfterAnswers)
        self.metrics = AddressServiceMetrics(registry, addresses)
        self.prober = AddressProber(self.liveness, reactor, clock, config.addressServiceProbeIntervalMillis / 1000.0,
                                    config.addressServiceProbeTimeoutMillis / 1000.0)
        self.prober.listeners.append(self.metrics.changed)
        self.prober.probed.append(self.metrics.probed)
        self.clock = clock
        self.resource = AddressResource(self.liveness, lambda: self.subgroups,
                                        RequestRate(config.addressServiceMaxRequestsPerSecond, clock),
                                        self.metrics.answered)
        config.add_listener(self.config_changed)

    def config_changed(self, name, old, new):
        try:
            if name == "addressServiceNamesrvAddr":
                addresses = parse_namesrv_addr(new)
                if not addresses:
                    raise ValueError("addressServiceNamesrvAddr: empty (the service is turned off at start only)")
                self.liveness.replace(addresses, self.clock.seconds())
                self.metrics.listed(addresses)
                log.info("address service lists {addresses}", addresses=self.liveness.text)
            elif name == "addressServiceSubgroups":
                self.subgroups = parse_subgroups(new)
        except ValueError as e:
            log.error("{why}: the address service keeps what it served", why=e)


def address_service(config, metrics_port, clock, reactor):
    """The AddressService when ``addressServiceNamesrvAddr`` is set, else None; ``/rocketmq`` goes on
    ``metrics_port`` (the MetricsHttpService, or None when ``prometheusListenPort`` is 0) either way.

    ValueError (refusing to start) for a bad list or subgroup, or a list with no port to serve it.
    """
    if not config.addressServiceNamesrvAddr.strip():
        if metrics_port is not None:
            metrics_port.children[PATH] = AddressServiceOff()
        return None
    if metrics_port is None:
        raise ValueError("addressServiceNamesrvAddr is set but prometheusListenPort is 0: the address service "
                         "answers on the Prometheus port (e.g. prometheusListenPort=8080, the port Java clients "
                         "ask when rocketmq.namesrv.domain names none)")
    if not parse_namesrv_addr(config.addressServiceNamesrvAddr):
        raise ValueError("addressServiceNamesrvAddr lists no name server")
    service = AddressService(config, metrics_port.metrics.registry, clock, reactor)
    metrics_port.children[PATH] = service.resource
    return service
