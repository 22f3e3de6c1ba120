"""The live configuration: every property's current value, changed only by ``update()``, with listeners."""

import os

from twisted.logger import Logger

from namesrv.config.keys import JAVA_ONLY_KEYS, RENAMED, inline_comment, suggestion
from namesrv.config.namesrvconfig import ALWAYS_BLACK_LISTED
from namesrv.config.origins import CONFIG_FILE, DEFAULT, OVERLAY
from namesrv.config.overlay import RuntimeOverlay
from namesrv.config.properties import PropertiesError, format_properties, load_properties_file
from namesrv.config.table import ConfigError, instance_path, java_text, parse_value
from namesrv.config.tables import BY_NAME, PROPERTIES

log = Logger()

__all__ = ["ConfigError", "NamesrvConfig"]

#: properties whose file another per-instance default sits beside (its directory moves with them)
_BESIDE = frozenset(p.beside for p in PROPERTIES if p.beside)


class NamesrvConfig:
    """The live configuration: read by attribute (``cfg.listenPort``), changed only by update().

    Keys that are not properties (a ``-c`` file may hold NettyClientConfig keys or others)
    are kept as extras and reported by GET_NAMESRV_CONFIG, as Java does. Each value remembers
    where it came from (origins.py); ``overlay`` is the file the network's changes go to.
    """

    def __init__(self):
        values = {p.name: parse_value(p, java_text(p.default)) for p in PROPERTIES}
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_extras", {})
        object.__setattr__(self, "_listeners", [])
        object.__setattr__(self, "_explicit", set())   # per-instance paths someone set
        object.__setattr__(self, "_texts", None)       # texts(), until the next change
        object.__setattr__(self, "_origins", {})       # name -> where its value came from, unless a default
        object.__setattr__(self, "_replaced", {})      # name -> the origin whose value the overlay outranks
        object.__setattr__(self, "overlay", RuntimeOverlay(self))
        # Every property is also a plain instance attribute: handlers read several per request,
        # and a __getattr__ hook would cost each of them (bench/results/design-figures.md#config-attributes).
        self.__dict__.update(values)
        self._derive_instance_paths()

    def texts(self):
        """{name: its value as Java prints it} of every property and extra key: the copy each publication to
        the read workers carries, built once per change (do not change it)."""
        texts = self._texts
        if texts is None:
            texts = {name: java_text(self.get(name)) for name in self.names()}
            object.__setattr__(self, "_texts", texts)
        return texts

    def _derive_instance_paths(self):
        """Per-instance defaults follow ``listenPort`` (and the file they sit beside) until set (``-c``,
        command line) or pinned."""
        for prop in PROPERTIES:
            if prop.per_instance and prop.name not in self._explicit:
                path = parse_value(prop, java_text(prop.default))
                if prop.beside:
                    path = os.path.join(os.path.dirname(self._values[prop.beside]), os.path.basename(path))
                value = instance_path(path, self.listenPort)
                self._values[prop.name] = self.__dict__[prop.name] = value

    def pin_instance_paths(self):
        """At start: the files this instance uses stay where they are whatever listenPort becomes."""
        self._explicit.update(p.name for p in PROPERTIES if p.per_instance)

    def instance_id_path(self):
        """The file holding this instance's id: next to its KV file, so each KV file has its own."""
        return self.kvConfigPath + ".instance"

    def __getattr__(self, name):
        raise AttributeError(name)

    def __setattr__(self, name, value):
        raise AttributeError("use update() to change %s" % name)

    def __contains__(self, name):
        """True for a property or an extra key already present (Java's "the property must exist")."""
        return name in self._values or name in self._extras

    def names(self):
        return sorted(set(self._values) | set(self._extras))

    def get(self, name, default=None):
        if name in self._values:
            return self._values[name]
        return self._extras.get(name, default)

    def extras(self):
        return dict(self._extras)

    def origin(self, name):
        """Where the value of ``name`` came from (origins.py): DEFAULT unless something set it."""
        return self._origins.get(name, DEFAULT)

    def names_from(self, origin):
        """The keys whose value came from ``origin``, sorted."""
        return sorted(name for name, where in self._origins.items() if where == origin)

    def replaced_origin(self, name):
        """The origin (other than the defaults) whose value of ``name`` a later one outranked, or None."""
        return self._replaced.get(name)

    def add_listener(self, callback):
        """``callback(name, old, new)`` after every change that update() applies."""
        self._listeners.append(callback)

    def remove_listener(self, callback):
        self._listeners.remove(callback)

    def black_list(self):
        """Keys UPDATE_NAMESRV_CONFIG refuses: the configBlackList entries and the hard-coded four."""
        listed = {k.strip() for k in self.configBlackList.split(";") if k.strip()}
        return listed | ALWAYS_BLACK_LISTED

    def update(self, mapping, source="update", announce=True, origin=None):
        """Apply ``mapping`` (name → text) all or nothing; returns {name: (old, new)} of what changed.

        Raises ConfigError, before changing anything, when a value does not parse. With
        ``announce`` false nothing is logged and no listener is called (a read worker's copy).
        ``origin`` (origins.py) records where the values of every key of ``mapping`` came from.
        """
        parsed, extras = {}, {}
        for key, text in mapping.items():
            prop = BY_NAME.get(key)
            if prop is None:
                extras[key] = java_text(text)
                continue
            try:
                parsed[key] = parse_value(prop, text)
            except ValueError as e:
                raise ConfigError("%s: bad value %r for %s (%s): %s" % (source, text, key, prop.kind, e))
        self._explicit.update(key for key in parsed if BY_NAME[key].per_instance)
        object.__setattr__(self, "_texts", None)
        changes = {}
        for table, updates in ((self._values, parsed), (self._extras, extras)):
            for key, value in updates.items():
                old = table.get(key)
                table[key] = value
                if table is self._values:
                    self.__dict__[key] = value
                if old != value:
                    changes[key] = (old, value)
        if origin is not None:
            self._note_origin(mapping, origin)
        if "listenPort" in changes or _BESIDE & set(changes):
            self._derive_instance_paths()
        if not announce:
            return changes
        for key, (old, new) in changes.items():
            log.info("config {key} changed from {old!r} to {new!r} ({source})", key=key, old=old, new=new,
                     source=source)
            for listener in list(self._listeners):
                try:
                    listener(key, old, new)
                except Exception:
                    log.failure("config listener {listener} failed on {key}", listener=listener, key=key)
        return changes

    def _note_origin(self, keys, origin):
        for key in keys:
            before = self._origins.get(key, DEFAULT)
            if before not in (DEFAULT, origin):
                self._replaced[key] = before
            self._origins[key] = origin

    def load_overlay(self):
        """Apply the runtime overlay (after the ``-c`` file and the command line); returns the keys whose
        value outranks the one the ``-c`` file gave. ConfigError (one line) for a file that cannot be
        used (overlay.py)."""
        mapping = self.overlay.read()
        self.update(mapping, source="runtime overlay %s" % self.overlay.path, announce=False, origin=OVERLAY)
        return [key for key in sorted(mapping) if self._replaced.get(key) == CONFIG_FILE]

    def load_file(self, path):
        """Apply the properties file ``path`` (the ``-c`` file); returns the keys that are not properties.

        As Java's NamesrvStartup, configStorePath becomes this file (made absolute: twistd
        may change directory); unlike Java's, nothing writes it (overlay.py). Keys that are not
        properties are kept as extras, unannounced (they change nothing): unknown_keys says
        what each one probably is. A value that ends in a ``# comment`` is refused: the file
        format keeps it as part of the value, in Java too.
        """
        try:
            mapping = load_properties_file(path)
        except OSError as e:
            raise ConfigError("cannot read config file %s: %s: give the path of a readable properties file "
                              "(conf/namesrv.properties is a template)" % (path, e.strerror or e))
        except PropertiesError as e:
            raise ConfigError("%s: %s" % (path, e))
        known = {key: text for key, text in mapping.items() if key in BY_NAME}
        unknown = [key for key in mapping if key not in BY_NAME]
        for key, text in known.items():
            if inline_comment(text):
                raise ConfigError("%s: %s=%s: the text after the value is part of it (a properties file, Java's "
                                  "too, has comment lines only): put the comment on a line of its own"
                                  % (path, key, text.strip()))
        known["configStorePath"] = os.path.abspath(os.path.expanduser(path))
        self.update(known, source=path, origin=CONFIG_FILE)
        self._extras.update((key, java_text(mapping[key])) for key in unknown)
        self._note_origin(unknown, CONFIG_FILE)
        object.__setattr__(self, "_texts", None)
        return unknown

    def unknown_keys(self, keys, source):
        """``(refusals, notes)``: one line per key of ``keys`` (from ``source``) that is not a property.

        A misspelt property (or Java key) is a refusal saying which one was meant; a key
        only Java reads, or one unknown to both, is a note."""
        refusals, notes = [], []
        for key in keys:
            if key in JAVA_ONLY_KEYS:
                notes.append("%s: %s is read by the Java NameServer only: kept, unused here" % (source, key))
                continue
            if key in RENAMED:
                refusals.append("%s: %s is now called %s: use that name" % (source, key, RENAMED[key]))
                continue
            meant = suggestion(key, BY_NAME)
            if meant is not None:
                case = " (names are case-sensitive, as in Java)" if meant.lower() == key.lower() else ""
                refusals.append("%s: unknown property %s: did you mean %s?%s" % (source, key, meant, case))
            else:
                notes.append("%s: unknown property %s: kept (GET_NAMESRV_CONFIG lists it, as Java's does), "
                             "unused" % (source, key))
        return refusals, notes

    def informational_settings(self):
        """``[(name, text)]`` of the informational properties (Java's, changing nothing here) set to a
        value other than their default: worth a warning at start, since the operator meant something."""
        return [(prop.name, java_text(self._values[prop.name])) for prop in PROPERTIES
                if prop.informational and self._values[prop.name] != parse_value(prop, java_text(prop.default))]

    def to_properties_text(self, extras=True):
        """Every property (and extra, unless ``extras`` is false), sorted by key, one ``key=value``
        line each (Java 5.x order)."""
        names = self.names() if extras else sorted(self._values)
        return format_properties((name, java_text(self.get(name))) for name in names)

    def event_log_path(self):
        if self.eventLogPath:
            return self.eventLogPath
        return instance_path(os.path.join(self.logDir, "namesrv-events.log"), self.listenPort)
