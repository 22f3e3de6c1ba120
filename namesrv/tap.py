"""`twistd namesrv`: command-line options and makeService."""

import sys

from twisted.python import usage
from twisted.logger import Logger

log = Logger()


class Options(usage.Options):
    """Options named like the Java `mqnamesrv` ones (`-c`, `-p`) plus `--listenPort`/`--host`."""

    synopsis = "[-c FILE] [-p] [--takeover] [--listenPort PORT] [--host ADDRESS] [--statusListenPort PORT]"
    longdesc = ("Runs a RocketMQ NameServer. Properties use the Java names (listenPort, kvConfigPath, "
                "orderMessageEnable, scanNotActiveBrokerInterval, ...); see conf/namesrv.properties.")
    optParameters = [
        ["configFile", "c", None, "Java-style .properties file with NameServer properties."],
        ["listenPort", None, None, "TCP port to listen on (default 9876).", int],
        ["host", None, None, "Address to bind (default 127.0.0.1; 0.0.0.0 for every interface)."],
        ["statusListenPort", None, None, "Serve the read-only status page on this HTTP port (default off).", int],
    ]
    optFlags = [
        ["printConfigItem", "p", "Print every effective property as key=value and exit."],
        ["takeover", None, "Replace the running process of this instance (same -c file) without dropping a "
                           "request: take its tables, port and connections (see README, Restarts nobody notices)."],
    ]

    def postOptions(self):
        from namesrv.config import ConfigError, NamesrvConfig

        config = NamesrvConfig()
        try:
            if self["configFile"]:
                unknown = config.load_file(self["configFile"])
                for key in unknown:
                    log.warn("unknown property {key} in {file} ignored", key=key, file=self["configFile"])
            overrides = {}
            if self["listenPort"] is not None:
                overrides["listenPort"] = str(self["listenPort"])
            if self["host"] is not None:
                overrides["bindAddress"] = self["host"]
            if self["statusListenPort"] is not None:
                overrides["statusListenPort"] = str(self["statusListenPort"])
            if overrides:
                config.update(overrides, source="command line")
        except (ConfigError, OSError) as e:
            raise usage.UsageError(str(e))
        self.config = config
        if self["printConfigItem"]:
            sys.stdout.write(config.to_properties_text())
            sys.stdout.flush()
            raise SystemExit(0)


def makeService(options):
    from namesrv.kvconfig import KVConfigError
    from namesrv.dispatch.registry import ProcessorConflictError
    from namesrv.service import make_service

    from namesrv.optional import missing_part

    try:
        return make_service(options.config, takeover=bool(options["takeover"]))
    except (KVConfigError, ProcessorConflictError, ValueError) as e:
        sys.stderr.write("namesrv: refusing to start: %s\n" % e)
        raise SystemExit(1)
    except ImportError as e:
        reason = missing_part(e)
        if reason is None:
            raise
        sys.stderr.write("namesrv: refusing to start: %s\n" % reason)
        raise SystemExit(1)
