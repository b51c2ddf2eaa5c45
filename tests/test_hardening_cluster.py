"""Hardened study execution (issue 15): cluster addresses, TLS settings, timeouts when no
Dask worker is there or all leave, and local workers that end with their parent."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from engine.studies import StudyError, StudySetup, run_study
from engine.studies.runner import check_cluster_address, cluster_security, execute
from engine.studies.synthetic import write_training_step

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("address", ["notaurl", "tcp://", "tcp://host", "http://h:1",
                                     "tcp://h:0", "tcp://h:70000", "tcp://h:12/x/y",
                                     "tcp://a b:1", "", "tls//h:1"])
def test_bad_addresses_are_refused(address):
    with pytest.raises(StudyError, match="expected tcp://HOST:PORT or tls://HOST:PORT"):
        check_cluster_address(address)
    with pytest.raises(StudyError):
        list(execute([], cluster=address))


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "tls://sched.lab:8786",
                                     "tcp://[::1]:8786", "tcp://node-3.example.org:1"])
def test_good_addresses(address):
    assert check_cluster_address(address) == address


def test_tls_needs_certificates(tmp_path):
    with pytest.raises(StudyError, match="TLS needs a CA file"):
        cluster_security("tls://h:1")
    with pytest.raises(StudyError, match="no such file"):
        cluster_security("tls://h:1", ca_file=str(tmp_path / "nope.pem"), cert="x")
    with pytest.raises(StudyError, match="not tls://"):
        cluster_security("tcp://h:1", ca_file="x")
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    sec = cluster_security("tls://h:1", ca_file=str(ca), cert=str(ca))
    assert sec.require_encryption and sec.tls_ca_file == str(ca)
    assert cluster_security("tcp://h:1") is None


def test_cli_rejects_bad_cluster_address(tmp_path):
    r = subprocess.run([sys.executable, str(REPO / "main.py"), "study", "timing", "--cluster",
                        "notaurl", "--out", str(tmp_path / "o")], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2 and "expected tcp://HOST:PORT" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("tr")
    t = write_training_step(d / "a.h5", "a", "diffusion", 2, weight_kb=4, layers=2)
    return StudySetup([t], config="DDR4-3200", params={"tRCD": [10, 12, 14, 16]})


def _points(setup):
    from engine.studies import get_study
    return [p.to_dict() for p in get_study("timing").points(setup)]


def test_no_worker_is_a_timeout_with_a_clear_error(setup):
    from distributed import LocalCluster
    with LocalCluster(n_workers=0, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        with pytest.raises(StudyError, match="no Dask worker joined .* within 2 s"):
            list(execute(_points(setup), cluster=cluster.scheduler_address,
                         worker_timeout=2.0))


def test_all_workers_gone_is_a_clear_error(setup):
    from distributed import LocalCluster
    from engine.studies import runner
    # distinct point ids (Dask runs equal keys once): many points, so the worker leaves with
    # points pending however fast this machine is; it is sent away after the first result
    pts = [dict(p, point_id=f"{p['point_id']}-{i}") for i in range(100)
           for p in _points(setup)]
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                      host="127.0.0.1", dashboard_address=None) as cluster:
        seen = 0
        with pytest.raises(StudyError, match="every Dask worker .* is gone|worker failed"):
            for _ in runner.execute(pts, cluster=cluster.scheduler_address,
                                    worker_timeout=3.0):
                seen += 1
                if seen == 1:
                    cluster.scale(0)
        assert 1 <= seen < len(pts)


@pytest.mark.slow
def test_local_workers_end_when_the_parent_is_killed(tmp_path):
    psutil = pytest.importorskip("psutil")
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from engine.studies.runner import _local
        import engine.studies.runner as r
        def slow(p):
            time.sleep(600)
        r.run_point = slow
        if __name__ == "__main__":
            for _ in _local([{{"point_id": "a"}}, {{"point_id": "b"}}], 2, None):
                pass
    """))
    parent = subprocess.Popen([sys.executable, str(script)])
    try:
        deadline = time.monotonic() + 90
        kids = []
        while time.monotonic() < deadline:
            kids = [c for c in psutil.Process(parent.pid).children(recursive=True)
                    if "multiprocessing" in " ".join(c.cmdline())]
            if len(kids) >= 2:
                break
            time.sleep(0.5)
        assert len(kids) >= 2, "the workers did not start"
        time.sleep(2.0)                       # initializers ran
    finally:
        parent.kill()
        parent.wait()
    gone, alive = psutil.wait_procs(kids, timeout=15)
    for p in alive:
        p.kill()
    assert not alive, f"{len(alive)} worker(s) outlived their parent"
