"""`twistd controller`: the controller alone, as Java's `mqcontroller -c controller.properties`.

The same properties as the embedded one (controllerDLegerGroup, controllerDLegerPeers,
controllerDLegerSelfId, controllerStorePath, ...), read from the ``-c`` file; ``-p`` prints them
and exits. It serves on this controller's address in ``controllerDLegerPeers`` and writes the
event log (``eventLogEnable``) as the name server does, named after the controller's port.
"""

import os

from twisted.application import service
from twisted.python import usage
from twisted.logger import Logger

log = Logger()

PROGRAM = "controller"


class Options(usage.Options):
    synopsis = "-c FILE [-p] [--force-new-controller-group]"
    longdesc = ("Runs a RocketMQ controller (RIP-44) without a name server. Properties use the Java names "
                "(controllerDLegerGroup, controllerDLegerPeers, controllerDLegerSelfId, controllerStorePath, "
                "scanInactiveMasterInterval, enableElectUncleanMaster, notifyBrokerRoleChanged, ...).")
    optParameters = [
        ["configFile", "c", None, "Java-style .properties file with the controller's properties."],
    ]
    optFlags = [
        ["printConfigItem", "p", "Print every effective property as key=value and exit."],
        ["force-new-controller-group", None, "Once, after a majority of the controllers is lost for good: start "
                                             "this controller as a new group of one from its own store, fencing the "
                                             "others (docs/runbook.md, ControllerQuorumLost)."],
    ]

    def postOptions(self):
        from namesrv.controller.service import ControllerConfigError, controller_peers
        from namesrv.startup import configure, refuse

        config = configure(PROGRAM, self["configFile"], printing=bool(self["printConfigItem"]))
        try:
            self_id, peers = controller_peers(config)
        except ControllerConfigError as e:
            refuse(PROGRAM, e)
        # the event log and every per-instance file are named after the controller's own port
        port = peers[self_id].rpartition(":")[2]
        config.update({"listenPort": port}, source="controller address", announce=False)
        self.config = config


class StandaloneController(service.MultiService):
    """The controller service, its Prometheus port (``prometheusListenPort``) and the event log's start and stop."""

    def __init__(self, controller, events, metrics=None):
        service.MultiService.__init__(self)
        self.controller = controller
        self.events = events
        controller.setServiceParent(self)
        self.metrics = metrics
        if metrics is not None:
            metrics.setServiceParent(self)

    def startService(self):
        self.events.start()
        service.MultiService.startService(self)
        self.events.emit("controller_started", listen="%s:%s" % self.controller.address)

    def stopService(self):
        d = service.MultiService.stopService(self)
        d.addBoth(lambda result: (self.events.stop(), result)[1])
        return d


def makeService(options):
    from twisted.internet import reactor

    from namesrv.controller.service import ControllerService
    from namesrv.observe.eventlog import event_log_for
    from namesrv.startup import StartupError, refuse
    from namesrv.startup.ownership import check_directory, claim_state_files
    from namesrv.startup.plan import controller_listens, controller_store, listen_address, log_directories
    from namesrv.startup.ports import check_ports

    config = options.config
    try:
        claims = claim_state_files([controller_store(config)], listen_address(config))
        check_ports(controller_listens(config))
        for prop, directory in log_directories(config):
            check_directory(prop, directory)
        events = event_log_for(config, reactor)
        controller = ControllerService(config, reactor, events,
                                       force_new_group=bool(options["force-new-controller-group"]))
    except (StartupError, ValueError) as e:
        refuse(PROGRAM, e)
    controller.state_files = claims   # held as long as the service lives (the process)
    log.info("controller state in {path}", path=os.path.abspath(os.path.expanduser(
        config.controllerStorePath or "~")))
    return StandaloneController(controller, events, _metrics_port(config, controller, events, reactor))


def _metrics_port(config, controller, events, reactor):
    """``/metrics`` with the controller's families and its requests, as the embedded one has them."""
    if not config.prometheusListenPort:
        return None
    from namesrv.dispatch.classes import RequestClassifier
    from namesrv.controller.metrics import ControllerCollector
    from namesrv.observe.metrics import MetricsHttpService, NamesrvMetrics
    metrics = NamesrvMetrics(RequestClassifier.from_registry(controller.registry), factory=controller.factory,
                             events=events)
    metrics.add_collector(ControllerCollector(controller.controller))
    controller.registry.add_observer(metrics)
    events.add_listener(metrics.event)
    return MetricsHttpService(metrics, config.prometheusListenPort, config.bindAddress or "127.0.0.1", reactor)
