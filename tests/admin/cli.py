"""The admin command line as the admin tests run it."""

import io

from namesrv.admin.cli import main


def admin(*argv, environ=None):
    """(exit status, stdout, stderr) of one namesrv-admin run in this process."""
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=out, stderr=err, environ=environ or {})
    return status, out.getvalue(), err.getvalue()
