"""Run a study's points: in local worker processes (default) or on a Dask cluster.

    results = run_points(points, sink=ResultsFolder("out"), workers=2,
                         progress=lambda done, total, record: ...)

Points already in the sink are not run again. Results reach the sink as they complete, in
completion order; the returned list is sorted by point id, so it is the same whatever the
executor, the number of workers or the order of completion.

Local runs use a ``ProcessPoolExecutor`` with the *spawn* start method (fork would copy a
parent's threads, e.g. a GUI's, into the workers); each worker imports the engine once and
reuses numba's on-disk kernel cache. ``workers=0`` runs the points in this process, one after
another. ``cluster="tcp://HOST:PORT"`` (or a ``distributed`` cluster object) sends the points
to a Dask scheduler; its workers must be able to import this repository's ``engine`` package
(same version) and read the trace files at the paths given (a shared file system).

Hardening (issue 15): a cluster address must be ``tcp://HOST:PORT`` or ``tls://HOST:PORT``
(:func:`check_cluster_address`); ``tls://`` uses Dask's security settings (a
``distributed.Security`` object, or the ``distributed.comm.tls`` section of the Dask
configuration, or the CLI's ``--tls-ca-file/--tls-cert/--tls-key``).  Connecting, waiting for
a first worker and running with no worker left each have a timeout ending in a
:class:`StudyError` that says what happened.  Local worker processes end when their parent
dies (``PR_SET_PDEATHSIG`` on Linux, and a watchdog thread polling the parent's pid
everywhere), instead of finishing a long point for nobody.
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import multiprocessing
import os
import re
import signal
import sys
import threading
import time
from typing import Any, Callable, Iterable, Iterator, Sequence

from engine.errors import SimulationCancelled
from engine.studies.jobs import run_point
from engine.studies.sinks import ResultSink
from engine.studies.spec import Point, StudyError

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int, dict[str, Any]], None]
CancelFn = Callable[[], bool]
POLL_S = 0.2
#: Seconds to reach a Dask scheduler, and to wait for a (first or replacement) worker.
CONNECT_TIMEOUT_S = 20.0
WORKER_TIMEOUT_S = 60.0
RESULT_WAIT_S = 2.0
_ADDRESS_RE = re.compile(r"^(?P<scheme>tcp|tls)://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)"
                         r":(?P<port>\d{1,5})/?$")


def check_cluster_address(address: str) -> str:
    """The address of a Dask scheduler, checked: ``tcp://HOST:PORT`` or ``tls://HOST:PORT``
    (HOST a name, an IPv4 address or a bracketed IPv6 address; PORT 1..65535)."""
    if not isinstance(address, str):
        raise StudyError(f"cluster address {address!r}: expected a string such as "
                         f"tcp://HOST:PORT")
    m = _ADDRESS_RE.match(address.strip())
    if m is None or not 1 <= int(m.group("port")) <= 65535:
        shown = address if len(address) <= 80 else address[:77] + "..."
        raise StudyError(f"cluster address {shown!r}: expected tcp://HOST:PORT or "
                         f"tls://HOST:PORT (e.g. tcp://10.0.0.5:8786), PORT 1-65535")
    return address.strip()


def cluster_security(address: str, *, ca_file: str | None = None, cert: str | None = None,
                     key: str | None = None) -> Any:
    """Dask ``Security`` for a ``tls://`` address: from the given files, else from the Dask
    configuration (``distributed.comm.tls``); None for ``tcp://``."""
    if not address.startswith("tls://"):
        if ca_file or cert or key:
            raise StudyError(f"TLS files given but the cluster address {address} is not "
                             f"tls://")
        return None
    from distributed.security import Security
    for what, f in (("CA file", ca_file), ("certificate", cert), ("key", key)):
        if f is not None and not os.path.isfile(f):
            raise StudyError(f"TLS {what} {f}: no such file")
    if ca_file or cert:
        if not (ca_file and cert):
            raise StudyError("tls:// needs --tls-ca-file and --tls-cert (and --tls-key unless "
                             "the certificate file holds the key)")
        return Security(tls_ca_file=ca_file, tls_client_cert=cert, tls_client_key=key,
                        require_encryption=True)
    sec = Security()                      # from the Dask configuration
    if not (sec.tls_ca_file and sec.tls_client_cert):
        raise StudyError(f"{address}: TLS needs a CA file and a client certificate: give "
                         f"--tls-ca-file/--tls-cert/--tls-key or set distributed.comm.tls in "
                         f"the Dask configuration")
    return sec


def _parent_watch(parent: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(1)                   # the parent is gone: nobody wants our result


def _worker_init(parent: int) -> None:
    """Initializer of local worker processes: end when the parent dies; leave Ctrl-C to the
    parent (a terminal sends SIGINT to the whole process group: a worker interrupted inside
    the pool's queue left its lock taken, and the parent hung at exit)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        # started with SIGINT blocked (see _local); one that came meanwhile is dropped now
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)
    threading.Thread(target=_parent_watch, args=(parent,), daemon=True,
                     name="diffmem-parent-watch").start()


def default_workers() -> int:
    """One worker per CPU core this process may use, at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:          # not on Linux
        return max(1, os.cpu_count() or 1)


def _inline(points: Sequence[dict[str, Any]], cancel: CancelFn | None
            ) -> Iterator[dict[str, Any]]:
    for p in points:
        if cancel is not None and cancel():
            raise SimulationCancelled("study cancelled")
        yield run_point(p)


def _local(points: Sequence[dict[str, Any]], workers: int, cancel: CancelFn | None
           ) -> Iterator[dict[str, Any]]:
    ctx = multiprocessing.get_context("spawn")
    pool = cf.ProcessPoolExecutor(max_workers=min(workers, len(points)), mp_context=ctx,
                                  initializer=_worker_init, initargs=(os.getpid(),))
    interrupted = False
    try:
        # the workers are spawned by submit: with SIGINT blocked here they inherit the mask
        # through exec, so a Ctrl-C before their initializer ignores it does not end them
        # with a traceback of their start-up; here it waits for the spawns to be complete
        with _sigint_blocked():
            pending = {pool.submit(run_point, p) for p in points}
        while pending:
            if cancel is not None and cancel():
                raise SimulationCancelled("study cancelled")
            done, pending = cf.wait(pending, timeout=POLL_S, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                yield fut.result()
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if interrupted:
            _stop_workers(pool)
        else:
            pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread for the block (POSIX), delivered when it ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _stop_workers(pool: cf.ProcessPoolExecutor) -> None:
    """Ctrl-C: end the workers now. Their current points are dropped (a point is atomic:
    nothing of it was stored; a rerun runs it again); waiting for them could take as long as
    a point."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.terminate()
    # (polled, not joined: the pool's own thread may hold the processes' sentinels, and a
    # join then returned at once with a worker still alive)
    deadline = time.monotonic() + 10.0
    while any(proc.is_alive() for proc in procs) and time.monotonic() < deadline:
        time.sleep(0.01)
    for proc in procs:
        if proc.is_alive():
            proc.kill()


def _dask(points: Sequence[dict[str, Any]], cluster: Any, cancel: CancelFn | None, *,
          security: Any = None, connect_timeout: float = CONNECT_TIMEOUT_S,
          worker_timeout: float = WORKER_TIMEOUT_S) -> Iterator[dict[str, Any]]:
    try:
        from distributed import Client
    except ImportError as exc:        # pinned in requirements.txt; a broken install
        raise StudyError(f"--cluster needs the 'distributed' package: {exc}") from exc
    where = cluster
    if isinstance(cluster, str):
        where = check_cluster_address(cluster)
        if security is None and where.startswith("tls://"):
            security = cluster_security(where)
    try:
        client = Client(where, timeout=f"{connect_timeout}s", set_as_default=False,
                        security=security)
    except (OSError, TimeoutError) as exc:
        raise StudyError(f"cannot reach the Dask scheduler at {where} within "
                         f"{connect_timeout:g} s: {exc}") from exc
    except (ValueError, TypeError) as exc:
        raise StudyError(f"cannot connect to the Dask scheduler at {where}: {exc}") from exc
    futures: list[Any] = []
    try:
        try:
            client.wait_for_workers(1, timeout=worker_timeout)
        except (TimeoutError, OSError) as exc:
            raise StudyError(f"no Dask worker joined the scheduler at {where} within "
                             f"{worker_timeout:g} s: start workers (dask worker "
                             f"{where}) or use local workers") from exc
        futures = client.map(run_point, list(points), key=[f"diffmem-point-{p['point_id']}"
                                                            for p in points], pure=False)
        pending = list(futures)
        no_worker_since: float | None = None
        last_check = 0.0
        while pending:
            if cancel is not None and cancel():
                raise SimulationCancelled("study cancelled")
            ready = [f for f in pending if f.done()]
            if not ready:
                now = time.monotonic()
                if now - last_check >= 1.0:
                    last_check = now
                    try:
                        n_workers = len(client.scheduler_info().get("workers", {}))
                    except (OSError, TimeoutError) as exc:
                        raise StudyError(f"lost the Dask scheduler at {where}: {exc}") from exc
                    if n_workers:
                        no_worker_since = None
                    elif no_worker_since is None:
                        no_worker_since = now
                    elif now - no_worker_since > worker_timeout:
                        raise StudyError(f"every Dask worker of {where} is gone and none "
                                         f"joined for {worker_timeout:g} s; {len(pending)} "
                                         f"point(s) not run (finished ones are kept: run "
                                         f"again to resume)")
                time.sleep(POLL_S / 4)
                continue
            taken = {id(f) for f in ready}
            pending = [f for f in pending if id(f) not in taken]
            for fut in ready:
                try:
                    # done() may be stale (a lost worker's task is rescheduled): never wait
                    # long here; a future that is not ready goes back to the pending list
                    record = fut.result(timeout=RESULT_WAIT_S)
                except TimeoutError:
                    pending.append(fut)
                    continue
                except OSError as exc:
                    raise StudyError(f"lost the Dask scheduler at {where}: {exc}") from exc
                except Exception as exc:  # noqa: BLE001 - e.g. KilledWorker, a worker bug
                    raise StudyError(f"point {fut.key}: the Dask worker failed "
                                     f"({type(exc).__name__}: {exc}); finished points are "
                                     f"kept: run again to resume") from exc
                yield record
    finally:
        if futures:
            try:
                client.cancel(futures)
            except Exception:  # noqa: BLE001 - the scheduler may be gone already
                pass
        client.close()


def execute(points: Sequence[dict[str, Any]], *, workers: int | None = None,
            cluster: Any = None, cancel: CancelFn | None = None, security: Any = None,
            worker_timeout: float = WORKER_TIMEOUT_S) -> Iterator[dict[str, Any]]:
    """Yield the result record of each point dictionary as it completes."""
    if isinstance(cluster, str):
        check_cluster_address(cluster)         # a bad address fails at once, even with no point
    if not points:
        return iter(())
    if cluster is not None:
        return _dask(points, cluster, cancel, security=security,
                     worker_timeout=worker_timeout)
    n = default_workers() if workers is None else int(workers)
    if n < 0:
        raise StudyError(f"workers = {n}: expected 0 (run here) or more")
    if n == 0 or len(points) == 1:
        return _inline(points, cancel)
    return _local(points, n, cancel)


def run_points(points: Iterable[Point], *, sink: ResultSink | None = None,
               workers: int | None = None, cluster: Any = None,
               progress: ProgressFn | None = None, cancel: CancelFn | None = None,
               security: Any = None, worker_timeout: float = WORKER_TIMEOUT_S
               ) -> list[dict[str, Any]]:
    """Run the points not already in *sink*; returns every point's record sorted by id.

    *progress(done, total, record)* is called after each point (records of skipped points
    count as done from the start). A point whose simulation fails yields an ``"error"``
    record: it is stored, left out of the finished set (so a restart retries it) and returned.
    *cancel()* is polled between results; when it returns true, the points not yet started
    are dropped, the local workers finish their current point (its result is discarded: a
    point is atomic), Dask futures are cancelled, and :class:`SimulationCancelled` is raised.
    Everything stored before stays stored.
    """
    pts = list(points)
    by_id: dict[str, Point] = {}
    for p in pts:
        by_id.setdefault(p.point_id, p)
    have = sink.done() if sink is not None else {}
    results = {pid: rec for pid, rec in have.items() if pid in by_id}
    todo = [by_id[pid].to_dict() for pid in sorted(by_id) if pid not in results]
    total = len(by_id)
    if results:
        log.info("resuming: %d of %d points already done", len(results), total)
    try:
        for record in execute(todo, workers=workers, cluster=cluster, cancel=cancel,
                              security=security, worker_timeout=worker_timeout):
            point = by_id[record["point_id"]]
            record = dict(record, tags=point.tags, label=point.trace["label"])
            if sink is not None:
                sink.add(record)
            results[record["point_id"]] = record
            if progress is not None:
                progress(len(results), total, record)
    finally:
        if sink is not None:
            sink.flush()
    return [results[pid] for pid in sorted(results)]
