"""Incremental staging: keep the classified lines between runs and re-read only the input files that changed.

With ``--incremental`` the classified lines live in ``<out>/_stage/`` (not deleted after the run),
partitioned by ``fileId`` (a hash of the input file's path) and ``event``, next to a manifest
``_stage/_manifest.json`` that records each staged file's size and modification time. A run lists the
inputs (names only, through the Hadoop FileSystem), then:

- a file that is new, or whose size or modification time changed, is classified again and its partition
  replaced (the live ``namesrv-events.log`` grows, so it is re-read; rotated files never change);
- a file that is no longer listed loses its partition;
- every other file is not opened at all.

Log files are written per server and rotated by day (and size), so a file's partition is in practice a
(server, day) partition: adding a new day's logs reads only that day. The reports themselves are then
recomputed from the whole staged table (Parquet, a fraction of the raw parsing cost).

The manifest is written last, through a temporary file and a rename: a run that dies before it leaves
partitions the manifest does not vouch for, and the next run deletes and re-stages them. A change of
``--java-tz`` re-stages everything (it changes the timestamps of Java lines).
"""

import hashlib
import json
import posixpath
import re

from pyspark.sql import functions as F

from spark import ingest

STAGE = "_stage"
MANIFEST = "_manifest.json"
ID_CHARS = 16
#: 2: the controller's fields (``schema.JSON_SCHEMA``); a stage of another version is staged again
VERSION = 2
#: ``file:///x`` and ``file:/x`` are the same file: Hadoop's listing spells an empty authority one way,
#: Spark's ``_metadata.file_path`` the other. Both sides hash the short form.
EMPTY_AUTHORITY = r"^([A-Za-z][A-Za-z0-9+.\-]*):///"


def file_id(key):
    """The partition value of an input file (the same hash as ``file_id_column`` computes in Spark)."""
    canonical = re.sub(EMPTY_AUTHORITY, r"\1:/", key)
    return hashlib.sha1(canonical.encode("utf-8")).hexdigest()[:ID_CHARS]


def file_id_column():
    canonical = F.regexp_replace(F.col("file"), EMPTY_AUTHORITY, "$1:/")
    return F.substring(F.sha1(canonical), 1, ID_CHARS)


def _hidden(relative):
    """Spark's text reader skips names starting with ``_`` or ``.`` at any depth below the root."""
    return any(part.startswith(("_", ".")) for part in relative.split("/") if part)


def list_files(spark, inputs):
    """({file key: ([size, mtime ms], path to read)}, missing inputs) for every file Spark would read.

    A key is the file's URI as Spark's ``_metadata.file_path`` spells it (qualified path, URL-encoded), so
    ``file_id(key)`` names the partition Spark writes for it; the path to read is the same, not encoded.
    """
    existing, missing = ingest.resolve_inputs(spark, inputs)
    files = {}
    for item in existing:
        path, fs = ingest.hadoop_path(spark, item)
        for status in fs.globStatus(path) or []:
            root = fs.makeQualified(status.getPath())
            if status.isDirectory():
                root_text = root.toUri().getPath().rstrip("/")
                found = fs.listFiles(root, True)
                while found.hasNext():
                    child = found.next()
                    qualified = fs.makeQualified(child.getPath())
                    relative = posixpath.relpath(qualified.toUri().getPath(), root_text)
                    if not _hidden(relative):
                        files[qualified.toUri().toString()] = ([child.getLen(), child.getModificationTime()],
                                                                qualified.toString())
            elif not _hidden(root.getName()):
                files[root.toUri().toString()] = ([status.getLen(), status.getModificationTime()], root.toString())
    return files, missing


class StageDir:
    """``<out>/_stage``: the partitions and the manifest, on the report's file system."""

    def __init__(self, out):
        self.out = out
        self.path = out.path(STAGE)

    def manifest(self):
        if not self.out.exists(STAGE + "/" + MANIFEST):
            return {}
        stream = self.out.fs.open(self.out._p(STAGE + "/" + MANIFEST))
        try:
            chunks = []
            reader = self.out.spark._jvm.java.io.BufferedReader(self.out.spark._jvm.java.io.InputStreamReader(stream))
            line = reader.readLine()
            while line is not None:
                chunks.append(line)
                line = reader.readLine()
        finally:
            stream.close()
        try:
            saved = json.loads("\n".join(chunks))
        except ValueError:
            return {}
        return saved if saved.get("version") == VERSION else {}

    def save(self, manifest):
        tmp, final = STAGE + "/" + MANIFEST + ".tmp", STAGE + "/" + MANIFEST
        stream = self.out.fs.create(self.out._p(tmp), True)
        stream.write(bytearray(json.dumps(dict(manifest, version=VERSION), sort_keys=True).encode("utf-8")))
        stream.close()
        self.out.delete(final)
        if not self.out.fs.rename(self.out._p(tmp), self.out._p(final)):
            raise IOError("cannot move the stage manifest into place")

    def partitions(self):
        """fileId values present on disk."""
        statuses = self.out.fs.globStatus(self.out._p(STAGE + "/fileId=*")) or []
        return {s.getPath().getName().split("=", 1)[1] for s in statuses}

    def drop(self, ids):
        for fid in ids:
            self.out.delete("%s/fileId=%s" % (STAGE, fid))


def update(spark, out, inputs, java_tz):
    """Bring ``<out>/_stage`` up to date with ``inputs``; returns what was read, kept and dropped."""
    stage = StageDir(out)
    files, missing = list_files(spark, inputs)
    saved = stage.manifest()
    known = saved.get("files", {}) if saved.get("java_tz") == java_tz else {}
    changed = sorted(key for key, (sig, _) in files.items() if known.get(key) != sig)
    kept = [key for key in files if key not in changed]
    wanted = {file_id(key) for key in kept}
    stage.drop(sorted(stage.partitions() - wanted))   # removed, changed, or never vouched for
    if changed:
        lines = spark.read.option("ignoreCorruptFiles", "true").text([files[key][1] for key in changed])
        lines = lines.select("value", F.col("_metadata.file_path").alias("file"))
        (ingest.classify(lines, java_tz).withColumn("fileId", file_id_column())
         .write.mode("append").partitionBy("fileId", "event").parquet(stage.path))
    stage.save({"java_tz": java_tz, "files": {key: sig for key, (sig, _) in files.items()}})
    return {"read": changed, "kept": sorted(kept), "dropped": sorted(set(known) - set(files)), "missing": missing}
