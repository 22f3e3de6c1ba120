"""``session.quick_jit_conf``: the JIT's first tier only for a small local input, C2 kept for the hot loops of a
large or remote one, never over the user's options."""

from spark import session


def test_a_small_local_input_gets_the_quick_jit_for_driver_and_executors(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.log").write_text("{}\n" * 10)
    assert session.quick_jit_conf([str(tmp_path / "a")]) == {
        "spark.driver.extraJavaOptions": session.QUICK_JIT, "spark.executor.extraJavaOptions": session.QUICK_JIT}
    mine = {"spark.driver.extraJavaOptions": "-Xss4m"}
    assert session.quick_jit_conf([str(tmp_path / "*")], mine) == {
        "spark.executor.extraJavaOptions": session.QUICK_JIT}


def test_a_large_or_remote_input_gets_the_patient_jit(tmp_path, monkeypatch):
    (tmp_path / "x.log").write_text("x" * 100)
    monkeypatch.setattr(session, "SMALL_INPUT_BYTES", 50)
    assert session.local_input_bytes([str(tmp_path)], limit=50) > 50
    both = {"spark.driver.extraJavaOptions": session.PATIENT_JIT, "spark.executor.extraJavaOptions": session.PATIENT_JIT}
    assert session.quick_jit_conf([str(tmp_path)]) == both
    assert session.quick_jit_conf(["hdfs:///logs/namesrv"]) == both
    assert session.PATIENT_JIT != session.QUICK_JIT and "TieredStopAtLevel" not in session.PATIENT_JIT
