"""`twistd namesrv`: command-line options and makeService.

A start that cannot work (a bad or misspelt property, a missing ``-c`` file, a busy port, a file
another running instance owns) ends here in one line on stderr and exit status 1, before twistd
daemonizes: no traceback and no usage text (namesrv/startup).
"""

from twisted.python import usage

from namesrv.dispatch.registry import ProcessorConflictError
from namesrv.kvconfig import KVConfigError
from namesrv.observe.stopwatch import StopWatch
from namesrv.optional import missing_part
from namesrv.startup import StartupError, configure, refuse
from namesrv.startup.ownership import check_directory, claim_state_files
from namesrv.startup.plan import listen_address, log_directories, namesrv_listens, namesrv_state_files
from namesrv.startup.ports import check_ports

PROGRAM = "namesrv"


class Options(usage.Options):
    """Options named like the Java `mqnamesrv` ones (`-c`, `-p`) plus `--listenPort`/`--host`."""

    synopsis = ("[-c FILE] [-p] [--takeover] [--listenPort PORT] [--host ADDRESS] [--statusListenPort PORT] "
                "[--force-new-controller-group]")
    longdesc = ("Runs a RocketMQ NameServer. Properties use the Java names (listenPort, kvConfigPath, "
                "orderMessageEnable, scanNotActiveBrokerInterval, ...); see conf/namesrv.properties.")
    # Values stay text here: the property table checks them and names the property when one is bad.
    optParameters = [
        ["configFile", "c", None, "Java-style .properties file with NameServer properties."],
        ["listenPort", None, None, "TCP port to listen on (default 9876)."],
        ["host", None, None, "Address to bind (default 127.0.0.1; 0.0.0.0 for every interface)."],
        ["statusListenPort", None, None, "Serve the read-only status page on this HTTP port (default off)."],
    ]
    optFlags = [
        ["printConfigItem", "p", "Print every property's effective value as key=value and exit."],
        ["takeover", None, "Replace the running process of this instance (same -c file) without dropping a "
                           "request: take its tables, port and connections (see docs/restarts.md)."],
        ["force-new-controller-group", None, "Once, after a majority of the controllers is lost for good: start "
                                             "this controller as a new group of one from its own store, fencing the "
                                             "others (docs/runbook.md, ControllerQuorumLost)."],
    ]

    def postOptions(self):
        overrides = {name: self[option] for option, name in (("listenPort", "listenPort"), ("host", "bindAddress"),
                                                               ("statusListenPort", "statusListenPort"))
                     if self[option] is not None}
        self["config"] = configure(PROGRAM, self["configFile"], overrides, printing=bool(self["printConfigItem"]))


def makeService(options):
    config = options["config"]
    takeover = bool(options["takeover"])
    try:
        # here, not at the top: a part that is not installed (prometheus-client, ...) is one line, not a traceback
        from namesrv.service import make_service
        # files first: a second instance started from the same -c file hears of that, not of its ports
        claims = claim_state_files(namesrv_state_files(config, options["configFile"]), listen_address(config),
                                   takeover)
        check_ports(namesrv_listens(config, takeover))
        for prop, directory in log_directories(config):
            check_directory(prop, directory)
        # a stop that hangs leaves its stacks in logDir (observe/stopwatch.py)
        service = make_service(config, takeover=takeover, state_files=claims, stop_watch=StopWatch(config.logDir),
                               force_new_controller_group=bool(options["force-new-controller-group"]))
    except (StartupError, KVConfigError, ProcessorConflictError, ValueError) as e:
        refuse(PROGRAM, e)
    except ImportError as e:
        reason = missing_part(e)
        if reason is None:
            raise
        refuse(PROGRAM, reason)
    return service
