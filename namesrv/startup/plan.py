"""What a server will open and own, for the checks before it starts: its ports and its state files."""

from namesrv.startup.ownership import StateFile
from namesrv.startup.ports import Listen


def namesrv_listens(config, takeover=False):
    """Every port ``twistd namesrv`` opens. A takeover's are the old process's until it hands them over."""
    if takeover:
        return []
    host = config.bindAddress or "127.0.0.1"
    ports = [Listen("listenPort", host, config.listenPort), Listen("statusListenPort", host, config.statusListenPort),
             Listen("prometheusListenPort", host, config.prometheusListenPort)]
    if config.enableControllerInNamesrv:
        ports.append(controller_listen(config))
    return ports


def controller_listens(config):
    """Every port ``twistd controller`` opens."""
    return [controller_listen(config),
            Listen("prometheusListenPort", config.bindAddress or "127.0.0.1", config.prometheusListenPort)]


def controller_listen(config):
    """The controller's own port: this controller's address in controllerDLegerPeers (ControllerConfigError,
    a ValueError, when the peers do not say)."""
    from namesrv.controller.replication import split_address
    from namesrv.controller.service import controller_peers
    self_id, peers = controller_peers(config)
    host, port = split_address(peers[self_id])
    return Listen("the controller's port (%s-%s in controllerDLegerPeers)" % (self_id, peers[self_id]), host, port,
                  "%s's address in controllerDLegerPeers" % self_id)


def namesrv_state_files(config, config_file=None):
    """The files a name server uses that no other running instance may share. The -c file (its
    configStorePath, which it reads and never writes) comes first: a second server started from the same
    file hears of that, which fixes the rest too."""
    files = [StateFile("configStorePath", config.configStorePath,
                       change="give this server a -c file of its own (the -c file is its configStorePath)",
                       required=False)] if config_file else []
    files += [StateFile("kvConfigPath", config.kvConfigPath), runtime_overlay(config)]
    if config.routeSnapshotEnable and config.routeSnapshotPath:
        files.append(StateFile("routeSnapshotPath", config.routeSnapshotPath))
    if config.enableControllerInNamesrv:
        files.append(controller_store(config))
    return files


def runtime_overlay(config):
    """The instance's runtime overlay (runtimeConfigPath): what the network changed, read at each start."""
    return StateFile("runtimeConfigPath", config.runtimeConfigPath)


def controller_state_files(config):
    """The files ``twistd controller`` uses: its store, and its runtime overlay beside it."""
    return [controller_store(config), runtime_overlay(config)]


def controller_store(config):
    """The controller's store directory (controllerStorePath, or its per-instance default)."""
    from namesrv.controller.service import store_dir
    return StateFile("controllerStorePath", store_dir(config), directory=True,
                     change="give this controller its own controllerStorePath, or leave it empty: its default "
                            "follows the port")


def listen_address(config):
    """``host:port`` of the instance, as its files' owner record names it."""
    return "%s:%s" % (config.bindAddress, config.listenPort)


def log_directories(config):
    """``(property, directory)`` the server writes its event log into, when it writes one."""
    import os
    if not config.eventLogEnable:
        return []
    return [("eventLogPath" if config.eventLogPath else "logDir", os.path.dirname(config.event_log_path()))]
