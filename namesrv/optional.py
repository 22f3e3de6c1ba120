"""One line, not a traceback, when a part a feature needs is not installed.

Each optional part is named by the module Python could not import; the line says which
feature wanted it and what to install.
"""

#: top-level module -> (what to install, pip argument)
HINTS = {
    "OpenSSL": ("pyOpenSSL (TLS)", "'twisted[tls]'"),
    "cryptography": ("cryptography (TLS)", "'twisted[tls]'"),
    "service_identity": ("service-identity (TLS)", "'twisted[tls]'"),
    "idna": ("idna (TLS)", "'twisted[tls]'"),
    "prometheus_client": ("prometheus-client (metrics)", "prometheus-client"),
    "yaml": ("PyYAML (the ACL file)", "pyyaml"),
    "msgspec": ("msgspec (registration decoding)", "msgspec"),
    "pyspark": ("PySpark (the Spark reports)", "'rocketmq-namesrv[spark]'"),
    "matplotlib": ("matplotlib (the Spark report's charts)", "'rocketmq-namesrv[spark]'"),
}


def missing_part(error):
    """The one-line explanation of ``error`` (an ImportError), or None when it is not a known optional part."""
    name = (getattr(error, "name", None) or "").split(".")[0]
    hint = HINTS.get(name)
    if hint is None:
        return None
    what, install = hint
    return "%s is not installed: pip install %s" % (what, install)
