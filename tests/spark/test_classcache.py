"""``spark.classcache``: the driver JVM's class archive is written once, used only when whole, and
forgotten with the Spark installation or Java runtime it was made for."""

import json
import os
import shutil
import subprocess

import pytest

from spark.classcache import PREFIX, STALE_TMP_S, ClassCache, fingerprint

JAVA = shutil.which("java")


def fake_home(tmp_path, jars=("spark-core.jar",)):
    home = tmp_path / "spark-home"
    (home / "jars").mkdir(parents=True)
    for name in jars:
        (home / "jars" / name).write_bytes(b"jar")
    return str(home)


def test_the_fingerprint_follows_the_jars_and_the_java(tmp_path):
    home = fake_home(tmp_path)
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\n")
    first = fingerprint(home, str(java))
    assert first and fingerprint(home, str(java)) == first
    (tmp_path / "spark-home" / "jars" / "extra.jar").write_bytes(b"more")
    assert fingerprint(home, str(java)) != first
    assert fingerprint(home, None) is None and fingerprint(str(tmp_path / "none"), str(java)) is None


def test_without_java_or_jars_there_is_no_archive(tmp_path):
    cache = ClassCache(str(tmp_path / "cache"), home=str(tmp_path / "nothing"), java=str(tmp_path / "no-java"))
    assert cache.state == "off" and cache.java_options() == "" and cache.finish(0) == "off"


@pytest.mark.skipif(JAVA is None, reason="no java on the PATH")
def test_an_archive_is_written_once_then_mapped_and_a_damaged_one_is_not_used(tmp_path):
    directory, home = str(tmp_path / "cache"), fake_home(tmp_path)
    cache = ClassCache(directory, home=home, java=JAVA)
    assert cache.state == "writing"
    options = cache.java_options()
    assert "-XX:ArchiveClassesAtExit=" in options and cache.tmp.endswith(".tmp")
    run = subprocess.run([JAVA] + options.split() + ["-version"], capture_output=True, timeout=120)
    assert cache.finish(run.returncode) == "written"
    assert os.path.exists(cache.path) and not os.path.exists(cache.tmp)

    again = ClassCache(directory, home=home, java=JAVA)
    assert again.state == "used" and again.java_options().startswith("-XX:SharedArchiveFile=%s " % cache.path)
    assert again.finish(0) == "used"      # a JVM that mapped it writes nothing

    with open(cache.path, "r+b") as f:    # cut short: its recorded size no longer matches
        f.truncate(os.path.getsize(cache.path) // 2)
    assert ClassCache(directory, home=home, java=JAVA).state == "writing"


@pytest.mark.skipif(JAVA is None, reason="no java on the PATH")
def test_a_jvm_that_failed_leaves_no_archive(tmp_path):
    cache = ClassCache(str(tmp_path / "cache"), home=fake_home(tmp_path), java=JAVA)
    cache.java_options()
    with open(cache.tmp, "wb") as f:
        f.write(b"half an archive")
    assert cache.finish(1) == "off"
    assert not os.path.exists(cache.tmp) and not os.path.exists(cache.path)


def test_archives_of_installations_that_are_gone_and_stale_temporaries_are_removed(tmp_path):
    directory = tmp_path / "cache"
    directory.mkdir()
    gone = directory / (PREFIX + "gone.jsa")
    gone.write_bytes(b"x")
    (directory / (PREFIX + "gone.json")).write_text(json.dumps({"size": 1, "spark_home": str(tmp_path / "old"),
                                                                  "java": str(tmp_path / "old-java")}))
    home = fake_home(tmp_path)
    java = tmp_path / "java"
    java.write_text("")
    kept = directory / (PREFIX + "kept.jsa")
    kept.write_bytes(b"x")
    (directory / (PREFIX + "kept.json")).write_text(json.dumps({"size": 1, "spark_home": home, "java": str(java)}))
    stale, fresh = directory / (PREFIX + "a.jsa.1.tmp"), directory / (PREFIX + "b.jsa.2.tmp")
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    os.utime(stale, (1, 1))
    cache = ClassCache(str(directory), home=home, java=str(java))
    cache.clean(now=os.path.getmtime(fresh) + 1)
    assert not gone.exists() and not (directory / (PREFIX + "gone.json")).exists() and not stale.exists()
    assert kept.exists() and fresh.exists()
    assert STALE_TMP_S > 1
