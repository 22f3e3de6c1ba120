"""`twistd controller`: the controller alone, as Java's `mqcontroller -c controller.properties`.

The same properties as the embedded one (controllerDLegerGroup, controllerDLegerPeers,
controllerDLegerSelfId, controllerStorePath, ...), read from the ``-c`` file; ``-p`` prints them
and exits. It serves on this controller's address in ``controllerDLegerPeers`` and writes the
event log (``eventLogEnable``) as the name server does, named after the controller's port.
"""

import os
from typing import TYPE_CHECKING, Any, Optional, Union, cast

from twisted.application import service
from twisted.python import usage
from twisted.logger import Logger

from namesrv.config.live import NamesrvConfig
from namesrv.config.origins import DEFAULT
from namesrv.controller.metrics import ControllerCollector
from namesrv.controller.service import ControllerService, controller_peers, store_dir
from namesrv.interfaces import IEventLog
from namesrv.observe.eventlog import event_log_for
from namesrv.observe.metrics import MetricsHttpService, NamesrvMetrics
from namesrv.observe.proxy_metrics import add_proxy_protocol_collector
from namesrv.observe.stopwatch import NullStopWatch, StopWatch
from namesrv.startup import StartupError, configure, refuse
from namesrv.startup.ownership import check_directory, claim_state_files
from namesrv.startup.plan import controller_listens, controller_state_files, listen_address, log_directories
from namesrv.startup.ports import check_ports

if TYPE_CHECKING:   # types only
    from namesrv.controller.service import IControllerReactor

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

    def postOptions(self) -> None:
        self["config"] = configure(PROGRAM, self["configFile"], printing=bool(self["printConfigItem"]),
                                settle=settle_controller, bind_warning=False)


def settle_controller(config: NamesrvConfig) -> None:
    """What a controller alone derives from its properties before its runtime overlay is read: every
    per-instance file is named after its own port (the event log too), and the overlay sits beside its
    store (it has no KV store). ControllerConfigError when the peers do not say which port is its own."""
    self_id, peers = controller_peers(config)
    port = peers[self_id].rpartition(":")[2]
    config.update({"listenPort": port}, source="controller address", announce=False)
    if config.origin("runtimeConfigPath") == DEFAULT:
        config.update({"runtimeConfigPath": store_dir(config).rstrip(os.sep) + "-runtime.properties"},
                      source="beside the controller's store", announce=False)


class StandaloneController(service.MultiService):
    """The controller service, its Prometheus port (``prometheusListenPort``) and the event log's start and stop;
    ``state_files`` (the store it claimed) are held as long as it lives."""

    def __init__(self, controller: ControllerService, events: IEventLog, metrics: Optional[MetricsHttpService] = None,
                 state_files: object = None, stop_watch: Union[StopWatch, NullStopWatch, None] = None) -> None:
        service.MultiService.__init__(self)
        self.controller = controller
        self.events = events
        self.state_files = state_files
        #: reports a stop that hangs, and handles SIGTERM on the reactor thread (observe/stopwatch.py)
        self.stop_watch: Union[StopWatch, NullStopWatch] = stop_watch if stop_watch is not None else NullStopWatch()
        controller.setServiceParent(self)
        self.metrics = metrics
        if metrics is not None:
            metrics.setServiceParent(self)

    def startService(self) -> None:
        self.events.start()
        self.stop_watch.start(self.controller.reactor)
        service.MultiService.startService(self)
        self.events.emit("controller_started", listen="%s:%s" % self.controller.address)

    def stopService(self) -> Any:     # Any: MultiService's own Deferred (untyped)
        d = service.MultiService.stopService(self)
        self.controller.config.overlay.flush_sync()   # an UPDATE_CONTROLLER_CONFIG still being written

        def stopped(result: object) -> object:
            self.events.stop()
            return result
        d.addBoth(stopped)
        return d


def makeService(options: Options) -> StandaloneController:
    from twisted.internet import reactor as installed   # the one twistd installed: imported only once it has
    # Twisted types it _IReactorCommon, which leaves out IReactorThreads (that every reactor provides)
    reactor = cast("IControllerReactor", installed)

    config = options["config"]
    try:
        claims = claim_state_files(controller_state_files(config), listen_address(config))
        check_ports(controller_listens(config))
        for prop, directory in log_directories(config):
            check_directory(prop, directory)
        events = event_log_for(config, reactor)
        controller = ControllerService(config, reactor, events,
                                       force_new_group=bool(options["force-new-controller-group"]))
    except (StartupError, ValueError) as e:
        refuse(PROGRAM, e)
    log.info("controller state in {path}", path=os.path.abspath(os.path.expanduser(
        config.controllerStorePath or "~")))
    return StandaloneController(controller, events, _metrics_port(config, controller, events, reactor), claims,
                                stop_watch=StopWatch(config.logDir, what="controller"))


def _metrics_port(config: NamesrvConfig, controller: ControllerService, events: IEventLog,
                  reactor: "IControllerReactor") -> Optional[MetricsHttpService]:
    """``/metrics`` with the controller's families and its requests, as the embedded one has them."""
    if not config.prometheusListenPort:
        return None
    metrics = NamesrvMetrics(controller.chain.classifier, factory=controller.factory, events=events,
                             limits=controller.chain.limits)
    metrics.add_collector(ControllerCollector(controller.controller))
    add_proxy_protocol_collector(metrics, {"controller": controller.proxy})
    controller.chain.registry.observers.add(metrics)
    controller.listeners.add(metrics)
    events.add_listener(metrics.event)
    return MetricsHttpService(metrics, config.prometheusListenPort, config.bindAddress or "127.0.0.1", reactor)
