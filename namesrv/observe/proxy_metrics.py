"""The PROXY protocol's counts on the metrics port (``proxyProtocolEnable``, server/proxyprotocol.py).

One family for every port that reads headers, labelled by port (``namesrv``, ``controller``) and
kind: headers read with a client address (``v1``, ``v2``) or without one (``local``: health
checks), untrusted peers that sent none (``direct``), and the connections closed for a header from
an untrusted address (``untrusted``), none from a trusted one (``missing``), a malformed or
oversized one (``bad``), one not complete in time (``timeout``), a silent untrusted peer
(``silent``) or ``serverMaxConnections`` (``over_limit``). A read worker's counts reach the main
process's every second and are added to its own.
"""

from prometheus_client.core import CounterMetricFamily

from namesrv.observe.metrics import PREFIX


class ProxyProtocolCollector:
    """A NamesrvMetrics collector for ``ports``: {port label: ProxyHeaderFactory} (a None factory is left out)."""

    def __init__(self, ports):
        self.ports = {label: factory for label, factory in ports.items() if factory is not None}

    def read(self):
        return {label: dict(factory.counts) for label, factory in self.ports.items()}

    def families(self, reading):
        family = CounterMetricFamily(PREFIX + "proxy_protocol_connections", "Connections by what their PROXY "
                                     "protocol header said (v1, v2; local: none named an address; direct: an "
                                     "untrusted peer sent none) and those closed for one (untrusted, missing, bad, "
                                     "timeout, silent, over_limit).", labels=["port", "kind"])
        for label, counts in sorted(reading.items()):
            for kind, value in sorted(counts.items()):
                family.add_metric([label, kind], value)
        yield family


def add_proxy_protocol_collector(metrics, ports):
    """Add the collector to ``metrics`` (a NamesrvMetrics) when a port in ``ports`` reads headers."""
    collector = ProxyProtocolCollector(ports)
    if collector.ports:
        metrics.add_collector(collector)
    return collector
