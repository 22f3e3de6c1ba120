"""The runtime overlay: the instance's own file of what the network changed, applied after the ``-c`` file.

Java's UPDATE_NAMESRV_CONFIG rewrites ``configStorePath``, which its NamesrvStartup points at the ``-c`` file:
one update replaces the operator's file (its comments, its order, the paths it left to their defaults) with
every property, and whatever was changed takes effect at the next start. Here a change from the network (only
keys marked ``runtime``: namesrv/config/runtime.py) is written to ``runtimeConfigPath``, a file of the
instance's own beside its KV store, and the ``-c`` file is never written. At start the ``-c`` file is applied,
then this file: the operator's file plus the overlay is the effective configuration, and ``-p`` says which
value came from where (origins.py).

It is written as the KV store is: atomically (storage/atomicfile.py), in the reactor's thread pool, one write
at a time, a burst coalesced into one write (kvconfig/filewriter.py), the previous version kept as ``.bak``.
A hand-edited overlay that holds a key which is not runtime is refused at start in one line: the network
could never have written it, and it would outrank the ``-c`` file unseen.
"""

from namesrv.config.origins import OVERLAY
from namesrv.config.properties import PropertiesError, format_properties, load_properties_file
from namesrv.config.table import ConfigError, java_text
from namesrv.config.tables import BY_NAME
from namesrv.kvconfig.filewriter import SerialFileWriter

HEADER = ("# The runtime overlay of one name server: the keys UPDATE_NAMESRV_CONFIG and UPDATE_CONTROLLER_CONFIG\n"
          "# changed, applied after its -c file at start. The server rewrites this file: stop it before editing,\n"
          "# and delete a line to go back to the -c file's value.\n")


class RuntimeOverlay:
    """The overlay file of one configuration (``config.overlay``): one writer, whichever port's request
    changed the configuration (the embedded controller shares the name server's)."""

    def __init__(self, config):
        self.config = config
        self._writer = None

    @property
    def path(self):
        return self.config.runtimeConfigPath

    def read(self):
        """``{key: text}`` of the file ({} when there is none yet); ConfigError (one line) for a file that
        cannot be read or holds a key that is not runtime."""
        path = self.path
        try:
            mapping = load_properties_file(path)
        except FileNotFoundError:
            return {}
        except OSError as e:
            raise ConfigError("runtimeConfigPath %s cannot be read: %s: make it readable, or give the instance "
                              "another runtimeConfigPath" % (path, e.strerror or e))
        except PropertiesError as e:
            raise ConfigError("runtimeConfigPath %s: %s" % (path, e))
        for key in mapping:
            prop = BY_NAME.get(key)
            if prop is None or not prop.runtime:
                raise ConfigError("runtimeConfigPath %s: %s is %s, so it cannot be in the runtime overlay: set it "
                                  "in the -c file and delete its line here" % (
                                      path, key, "not a property" if prop is None else "not changeable at run time"))
        return mapping

    def text(self):
        """The file as it must be now: every key whose value came from the overlay, sorted."""
        config = self.config
        return HEADER + format_properties((name, java_text(config.get(name))) for name in config.names_from(OVERLAY))

    def save(self, reactor=None):
        """A Deferred firing once the overlay as it is now is on disk (failing with the write's error)."""
        if self._writer is None:
            self._writer = SerialFileWriter(self.path, lambda: self.text().encode("utf-8"), reactor=reactor,
                                            keep_backup=True, what="runtime overlay")
        return self._writer.changed()

    def flush_sync(self):
        """At shutdown: a write still queued is done now, on this thread."""
        if self._writer is not None:
            self._writer.flush_sync()
