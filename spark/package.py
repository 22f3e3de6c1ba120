"""Build what ``spark-submit`` needs: ``python -m spark.package --dist dist`` (``make spark-package``).

Writes two files into ``--dist``:

- ``spark.zip``: the ``spark`` package (its ``.py`` files only), for ``--py-files``;
- ``spark_report.py``: a three-line launcher to give spark-submit as the application file.

spark-submit puts the application file's directory first on ``sys.path``; handing it ``spark/report.py``
from a checkout would make every module of the package importable under a bare name too (``session``,
``output``...), so the launcher lives outside the package. Only the driver runs our Python (there is no
Python UDF), but ``--py-files`` ships the zip to the executors as well, which costs nothing.

The zip is reproducible (sorted entries, fixed timestamps) and each file is written to a temporary
name and renamed, so a reader never sees half a zip.
"""

import argparse
import os
import sys
import zipfile

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
ZIP_NAME = "spark.zip"
LAUNCHER_NAME = "spark_report.py"
LAUNCHER = ('"""spark-submit entry point for the NameServer reports (built by ``python -m spark.package``)."""\n'
            "import sys\n\nfrom spark.report import main\n\nsys.exit(main())\n")
#: 1980-01-01, the earliest time a zip entry can hold: the same sources give the same bytes.
FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def sources(package_dir=PACKAGE_DIR):
    """(path on disk, name in the zip) for every ``.py`` file of the package, sorted."""
    found = []
    for root, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                found.append((path, os.path.join("spark", os.path.relpath(path, package_dir)).replace(os.sep, "/")))
    return sorted(found, key=lambda item: item[1])


def _replace(path, write):
    tmp = path + ".tmp"
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def build_zip(path, package_dir=PACKAGE_DIR):
    def write(tmp):
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for source, name in sources(package_dir):
                info = zipfile.ZipInfo(name, FIXED_TIME)
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                with open(source, "rb") as f:
                    z.writestr(info, f.read())
    return _replace(path, write)


def build_launcher(path):
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(LAUNCHER)
    return _replace(path, write)


def build(dist):
    """Write ``spark.zip`` and ``spark_report.py`` into ``dist``; returns their paths."""
    os.makedirs(dist, exist_ok=True)
    return build_zip(os.path.join(dist, ZIP_NAME)), build_launcher(os.path.join(dist, LAUNCHER_NAME))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m spark.package", description=__doc__.split("\n\n")[0])
    p.add_argument("--dist", default="dist", help="directory for spark.zip and spark_report.py (created)")
    args = p.parse_args(argv)
    archive, launcher = build(args.dist)
    from spark.session import SUBMIT_DRIVER_JAVA_OPTIONS
    print("%s\n%s" % (archive, launcher))
    print("spark-submit --driver-java-options '%s' --py-files %s %s --input LOGS --output REPORT_DIR"
          % (SUBMIT_DRIVER_JAVA_OPTIONS, archive, launcher), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
