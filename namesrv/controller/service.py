"""The controller as a service: its own port, its timers, its replicated log.

Embedded (``enableControllerInNamesrv=true``) it is a child of the name server's service; alone it
is the whole of ``twistd controller``. Either way it listens where Java's controller listens,
on this controller's address in ``controllerDLegerPeers``, with a processor registry of its own
(the plugins that declare ``port="controller"``), so BROKER_HEARTBEAT there is the controller's.

Its timers: the heartbeat scan (``scanNotActiveBrokerInterval``, first after 2 s as Java's) and
the leader's inactive-master scan (``scanInactiveMasterInterval``).
"""

import os
from dataclasses import dataclass
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Optional, Union, cast

from twisted.application import service
from twisted.application.internet import TCPServer
from twisted.internet import defer, protocol
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IListeningPort
from twisted.logger import Logger

from namesrv.timing.clock import MonotonicClock
from namesrv.config import CONTROLLER_CONFIG_KEYS
from namesrv.config.live import NamesrvConfig
from namesrv.controller.core import Controller
from namesrv.controller.heartbeats import BrokerHeartbeats
from namesrv.controller.notifier import RoleChangeNotifier
from namesrv.controller.relay import RELAY_INTERVAL, LivenessRelay
from namesrv.controller.replication import peer_table, split_address
from namesrv.controller.replication.identity import IdentityError, MemberIdentity
from namesrv.controller.replication.sniffing import MemberSniffingFactory
from namesrv.controller.routing import CommittedMasterRouting, CommittedMasterRoutes
from namesrv.controller.state import ReplicaState
from namesrv.dispatch.chain import controller_chain
from namesrv.dispatch.registry import load_processor_factories
from namesrv.interfaces import IEventLog, IRemotingConnection, IReplicatedLog
from namesrv.plugin import CONTROLLER_PORT
from namesrv.security.wiring import AclFile, GuardListeners
from namesrv.timing.periodic import PeriodicCall
from namesrv.server.factory import RemotingServerFactory
from namesrv.server.proxyprotocol import proxy_protocol_factory

if TYPE_CHECKING:   # types only
    from twisted.internet.interfaces import IReactorTCP

    from namesrv.context import IServerReactor
    from namesrv.controller.replication.local import LocalLog
    from namesrv.controller.replication.raft import RaftLog, RaftTiming

    class IControllerReactor(IServerReactor, IReactorTCP):
        """The reactor the controller runs on: the name server's (time, threads), and TCP (its port, the role
        notifications, the member links). A make-believe interface for the type checker only, as
        ``namesrv.context.IServerReactor``."""

log = Logger()


class ControllerConfigError(ValueError):
    """The controller properties do not describe a controller that can start; says which and why."""


@dataclass
class ControllerContext:
    """What the controller's processors share (the name server's NamesrvContext has the route tables)."""

    config: NamesrvConfig
    controller: Controller
    reactor: "IServerReactor"
    events: IEventLog

    def config_names(self) -> list[str]:
        return sorted(CONTROLLER_CONFIG_KEYS)


class ControllerHousekeeping:
    """A closed connection on the controller port: the broker beating on it is gone."""

    def __init__(self, heartbeats: BrokerHeartbeats) -> None:
        self.heartbeats = heartbeats

    def connection_closed(self, connection: IRemotingConnection) -> None:
        self.heartbeats.connection_closed(connection)


def store_dir(config: NamesrvConfig) -> str:
    """``controllerStorePath``, else Java's ``~/DLedgerController`` made per instance as the name server's
    files are (``instance_path``: ``-<port>`` on a port other than 9876), so that two instances on one
    host never share a controller's state."""
    from namesrv.config import instance_path
    if config.controllerStorePath:
        return os.path.expanduser(config.controllerStorePath)
    return os.path.expanduser(instance_path(os.path.join("~", config.controllerType + "Controller"), config.listenPort))


def controller_peers(config: NamesrvConfig) -> tuple[str, dict[str, str]]:
    """(self id, {id: address}) from the properties, or ControllerConfigError."""
    if config.controllerType != "DLedger":
        raise ControllerConfigError("controllerType=%s is not supported: use DLedger (controllerDLegerPeers), "
                                    "replicated here by Raft" % config.controllerType)
    try:
        peers = peer_table(config.controllerDLegerPeers)
    except ValueError as e:
        raise ControllerConfigError(str(e))
    if not peers:
        raise ControllerConfigError("controllerDLegerPeers is empty: list the controllers as id-host:port;...")
    if not config.controllerDLegerSelfId:
        raise ControllerConfigError("controllerDLegerSelfId is empty: say which of %s this one is"
                                    % ", ".join(peers))
    if config.controllerDLegerSelfId not in peers:
        raise ControllerConfigError("controllerDLegerSelfId=%s is not in controllerDLegerPeers (%s)"
                                    % (config.controllerDLegerSelfId, ", ".join(peers)))
    return config.controllerDLegerSelfId, peers


#: the shortest shared secret accepted (an HMAC-SHA256 key; 16 random bytes are 128 bits)
MIN_SECRET_BYTES = 16
#: how to make one, as every refusal about the secret says
SECRET_COMMAND = "head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE"
MAKE_SECRET = "give every member the same secret file (e.g. %s)" % SECRET_COMMAND


def peer_secret(config: NamesrvConfig, peers: Mapping[str, str]) -> Optional[list[bytes]]:
    """The members' shared secrets (a list of bytes: the first one used, every one accepted; a second line is
    a new secret being rolled out), or None where the operator opted out; ControllerConfigError when
    several controllers have neither: a group nobody authenticates does not start."""
    path = config.controllerPeerSecretFile
    if not path:
        if config.controllerPeerAuthDisabled:
            return None
        raise ControllerConfigError(
            "controllerDLegerPeers lists %d controllers but controllerPeerSecretFile is not set: %s, or set "
            "controllerPeerAuthDisabled=true on a closed network" % (len(peers), MAKE_SECRET))
    path = os.path.expanduser(path)
    try:
        with open(path, "rb") as f:
            secrets = [line.strip() for line in f.read().splitlines() if line.strip()]
    except OSError as e:
        raise ControllerConfigError("controllerPeerSecretFile=%s cannot be read (%s): correct the path, or %s, "
                                    "readable by the user that runs the name server"
                                    % (path, e.strerror or e, MAKE_SECRET))
    if not secrets or len(secrets) > 2:
        raise ControllerConfigError("controllerPeerSecretFile=%s holds %d lines: one secret (e.g. %s), or two while "
                                    "a new one is rolled out, the same file on every member"
                                    % (path, len(secrets), SECRET_COMMAND))
    for secret in secrets:
        if len(secret) < MIN_SECRET_BYTES:
            raise ControllerConfigError("controllerPeerSecretFile=%s holds a secret of %d bytes: use at least %d "
                                        "random bytes (e.g. %s), the same file on every member"
                                        % (path, len(secret), MIN_SECRET_BYTES, SECRET_COMMAND))
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = 0
    if mode & 0o077:
        log.warn("controllerPeerSecretFile {path} can be read by other users (mode {mode:o}): chmod 600 it",
                 path=path, mode=mode & 0o777)
    return secrets


def member_identity(config: NamesrvConfig, self_id: str) -> Optional[MemberIdentity]:
    """This member's key and the members' public keys (identity.py), or None where authentication is off;
    ControllerConfigError naming the property otherwise."""
    if config.controllerPeerAuthDisabled and not config.controllerMembersFile:
        return None
    members = config.controllerMembersFile
    if not members:
        raise ControllerConfigError(
            "several controllers need controllerMembersFile: each member proves its id with a key of its own. "
            "On each member: namesrv-admin createControllerKey -i %s -o %s.key, then list every printed line in one "
            "file given to every member as controllerMembersFile" % (self_id, self_id))
    members = os.path.expanduser(members)
    key = os.path.expanduser(config.controllerMemberKeyFile) if config.controllerMemberKeyFile else \
        os.path.join(os.path.dirname(os.path.abspath(members)), self_id + ".key")
    try:
        return MemberIdentity(self_id, key, members)
    except IdentityError as e:
        raise ControllerConfigError(str(e))


def raft_timing(config: NamesrvConfig) -> "RaftTiming":
    """Raft's timers and the store's bounds from the properties; ControllerConfigError when the snapshot
    thresholds cannot keep the store under controllerStoreMaxBytes."""
    from namesrv.controller.replication.raft import RaftTiming
    if config.controllerSnapshotBytes * 4 > config.controllerStoreMaxBytes:
        raise ControllerConfigError(
            "controllerSnapshotBytes=%d cannot keep the store under controllerStoreMaxBytes=%d (a journal that size, "
            "its rewrite and two snapshots): use at most a quarter of it" % (config.controllerSnapshotBytes,
                                                                            config.controllerStoreMaxBytes))
    if config.controllerSnapshotEntries < 2 or config.controllerSnapshotIntervalSeconds < 1:
        raise ControllerConfigError("controllerSnapshotEntries must be at least 2 and controllerSnapshotIntervalSeconds "
                                    "at least 1")
    return RaftTiming(compaction_entries=config.controllerSnapshotEntries,
                      compaction_seconds=config.controllerSnapshotIntervalSeconds,
                      compaction_bytes=config.controllerSnapshotBytes, store_max_bytes=config.controllerStoreMaxBytes,
                      transfer_timeout=max(0.1, config.controllerLeaderTransferTimeoutMillis / 1000.0))


def make_replicated_log(config: NamesrvConfig, state: ReplicaState, reactor: "IServerReactor",
                        force_new_group: bool = False) -> Union["LocalLog", "RaftLog"]:
    self_id, peers = controller_peers(config)
    directory = store_dir(config)
    group = config.controllerDLegerGroup
    if len(peers) == 1 and not config.controllerJoin:
        if force_new_group:
            raise ControllerConfigError("--force-new-controller-group: this controller is alone already "
                                        "(controllerDLegerPeers lists one controller)")
        from namesrv.controller.replication.local import LocalLog
        log = LocalLog(state, directory, self_id, peers[self_id], group, reactor)
        log.load()      # an unreadable state refuses to start here, before anything listens
        return log
    secrets = peer_secret(config, peers)
    identity = member_identity(config, self_id) if secrets else None
    from namesrv.controller.replication.raft import RaftLog
    return RaftLog(state, os.path.join(directory, self_id), self_id, peers, group, reactor, secrets=secrets,
                   identity=identity, timing=raft_timing(config), force_new_group=force_new_group,
                   join=config.controllerJoin)


class ControllerPortError(ControllerConfigError):
    """The controller's address in controllerDLegerPeers cannot be listened on."""


class ControllerPort(TCPServer):
    """The controller port; a port that cannot be bound is one line naming it, never a retry loop."""

    def _getPort(self) -> IListeningPort:
        try:
            return TCPServer._getPort(self)
        except CannotListenError as e:
            reason = getattr(e.socketError, "strerror", None) or e.socketError
            raise ControllerPortError("the controller cannot listen on %s:%s, its address in controllerDLegerPeers "
                                      "(%s)" % (e.interface or "*", e.port, reason))


class ControllerService(service.MultiService):
    name = "controller"

    def __init__(self, config: NamesrvConfig, reactor: "IControllerReactor", events: IEventLog,
                 clock: Optional[MonotonicClock] = None, plugin_package: Optional[ModuleType] = None,
                 replicated: Optional[IReplicatedLog] = None, notifier: Optional[RoleChangeNotifier] = None,
                 acl: Optional[AclFile] = None, force_new_group: bool = False) -> None:
        service.MultiService.__init__(self)
        self.config = config
        self.reactor = reactor
        self.events = events
        clock = clock or MonotonicClock()
        self.state = ReplicaState()
        self.heartbeats = BrokerHeartbeats(clock, reactor, config)
        self.replicated: IReplicatedLog = replicated if replicated is not None else make_replicated_log(
            config, self.state, reactor, force_new_group)
        self.notifier = notifier if notifier is not None else RoleChangeNotifier(reactor)
        self.controller = Controller(config, self.state, self.replicated, self.heartbeats, reactor, self.notifier,
                                     events)
        self.context = ControllerContext(config=config, controller=self.controller, reactor=reactor, events=events)
        self.routing: Optional[CommittedMasterRouting] = None   # once a name server's routes follow this member
        processors = [factory.build(self.context)
                      for factory in load_processor_factories(plugin_package, port=CONTROLLER_PORT)]
        if acl is None and config.aclEnable:
            # alone (twistd controller): its own watched ACL file; embedded, the name server's
            acl = AclFile(config, reactor)
            acl.setServiceParent(self)
        #: who hears of refusals and queue waits (the metrics add themselves)
        self.listeners = GuardListeners()
        self.chain = controller_chain(processors, config, events, reactor,
                                      acl_store=acl.store if acl is not None else None, listeners=[self.listeners])
        self.registry = self.chain.registry
        self.factory = RemotingServerFactory(self.chain.entry, config, ControllerHousekeeping(self.heartbeats), events,
                                             reactor)
        host, port = split_address(getattr(self.replicated, "self_address", None)
                                   or self.replicated.peers[self.replicated.self_id])
        self.address = (host, port)
        listening: protocol.Factory = self.factory
        mesh = getattr(self.replicated, "mesh", None)
        if mesh is not None:
            # the other controllers talk Raft on this same port (DLedger's one address per controller)
            listening = MemberSniffingFactory(self.factory, mesh, reactor,
                                              max_pending=config.controllerMemberMaxPendingHandshakes)
        #: PROXY headers before anything else (proxyProtocolEnable, server/proxyprotocol.py), or None
        self.proxy = proxy_protocol_factory(config, listening, self.factory, reactor)
        if self.proxy is not None:
            listening = self.proxy
        self.port_service = ControllerPort(port, listening, backlog=config.serverSocketBacklog or 50,
                                           interface=host, reactor=reactor)
        self.port_service.setServiceParent(self)
        PeriodicCall("controller heartbeat scan", self.heartbeats.scan,
                     lambda: config.scanNotActiveBrokerInterval / 1000.0, 2.0, reactor).setServiceParent(self)
        self.inactive_master_scan = PeriodicCall(
            "controller inactive-master scan", self.controller.scan_inactive_masters,
            lambda: config.scanInactiveMasterInterval / 1000.0, config.scanInactiveMasterInterval / 1000.0, reactor)
        self.inactive_master_scan.setServiceParent(self)
        config.add_listener(self._config_changed)
        self.relay: Optional[LivenessRelay] = None
        if hasattr(self.replicated, "send_note"):
            # several controllers: the leader asks the others about brokers it does not hear (relay.py)
            raft = cast("RaftLog", self.replicated)         # the one log with notes
            self.relay = LivenessRelay(self.heartbeats, self.state, raft, config)
            PeriodicCall("controller liveness relay", self.relay.tick, lambda: RELAY_INTERVAL, RELAY_INTERVAL,
                         reactor).setServiceParent(self)

    def _config_changed(self, name: str, old: object, new: object) -> None:
        if name == "scanInactiveMasterInterval":   # UPDATE_CONTROLLER_CONFIG: the next scan one new period away
            self.inactive_master_scan.restart()

    def follow_elections_in_routes(self, routes: CommittedMasterRoutes) -> CommittedMasterRouting:
        """The name server's ``routes`` list each master this member sees elected (routing.py)."""
        self.routing = CommittedMasterRouting(self.state, self.replicated, routes, self.events, self.reactor)
        return self.routing

    def committed_master_address(self, broker_name: str) -> Optional[str]:
        """The broker address of the master this member's state holds for ``broker_name`` (None: no group, or
        no master): what the replicated log committed, as far as this member has applied it."""
        group = self.state.group(broker_name)
        return group.master_address if group is not None else None

    @property
    def listening_port(self) -> Optional[int]:
        """The bound port (after start), e.g. when the configuration named port 0."""
        port = getattr(self.port_service, "_port", None)
        return port.getHost().port if port is not None else None

    def startService(self) -> None:
        # the port first: a controller that cannot listen must not join the others' elections
        service.MultiService.startService(self)
        self.replicated.start()
        log.info("controller {id} of group {group} serving on {host}:{port} ({mode})", id=self.replicated.self_id,
                 group=self.replicated.group, host=self.address[0], port=self.listening_port,
                 mode=self.replicated.status()["mode"])

    def stopService(self) -> "defer.Deferred[Any]":     # Any: MultiService's own (untyped) Deferred, or all of them
        d = service.MultiService.stopService(self)
        self.controller.stop()
        if self.routing is not None:
            self.routing.stop()
        self.heartbeats.stop()
        self.factory.close_all()
        stopped = self.replicated.stop()
        if isinstance(stopped, defer.Deferred):
            return defer.gatherResults([d, stopped], consumeErrors=True)
        return d
