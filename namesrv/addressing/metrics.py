"""The address service's metrics, in the server's Prometheus registry (``rocketmq_namesrv_address_service_*``).

Updated on the reactor thread when the served list changes and when an answer is written;
prometheus_client's own locks make them safe to render from the scrape's thread.
"""

from prometheus_client import Counter, Gauge

from namesrv.observe.metrics import PREFIX

NAME = PREFIX + "address_service_"


class AddressServiceMetrics:
    def __init__(self, registry, addresses):
        self.served = Gauge(NAME + "namesrv_served", "1 while a listed name server is in the served list (it "
                            "answers its probes), 0 once it has been silent for addressServiceDownAfterMillis.",
                            ["namesrv"], registry=registry)
        self.changes = Counter(NAME + "changes", "Changes of the served list: a listed name server removed "
                               "(silent) or restored (answering again).", ["namesrv", "change"], registry=registry)
        self.fallback = Gauge(NAME + "fallback", "1 while no listed name server answers and the whole "
                              "configured list is served.", registry=registry)
        self.probes = Counter(NAME + "probes", "Probes of listed name servers (a real remoting request), by "
                              "result: answered or failed (refused, timed out, closed).", ["namesrv", "result"],
                              registry=registry)
        self.requests = Counter(NAME + "requests", "Address requests (GET /rocketmq/{subgroup}) by HTTP status.",
                                ["code"], registry=registry)
        for code in ("200", "400", "404", "405", "414", "429"):
            self.requests.labels(code)
        self.listed(addresses)

    def listed(self, addresses):
        """The configured list (at start, or changed): every listed server starts served."""
        self.served.clear()
        for address in addresses:
            self.served.labels(address).set(1)
            self.changes.labels(address, "removed")
            self.changes.labels(address, "restored")
            self.probes.labels(address, "answered")
            self.probes.labels(address, "failed")

    def changed(self, address, change, liveness):
        """An AddressProber listener."""
        self.changes.labels(address, change).inc()
        for listed, state in liveness.states.items():
            self.served.labels(listed).set(1 if state.served else 0)
        self.fallback.set(1 if liveness.fallback else 0)

    def probed(self, address, answered):
        """An AddressProber ``probed`` listener."""
        self.probes.labels(address, "answered" if answered else "failed").inc()

    def answered(self, code):
        self.requests.labels(str(code)).inc()
