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
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing
import os
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
    pool = cf.ProcessPoolExecutor(max_workers=min(workers, len(points)), mp_context=ctx)
    try:
        pending = {pool.submit(run_point, p) for p in points}
        while pending:
            if cancel is not None and cancel():
                raise SimulationCancelled("study cancelled")
            done, pending = cf.wait(pending, timeout=POLL_S, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                yield fut.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _dask(points: Sequence[dict[str, Any]], cluster: Any, cancel: CancelFn | None
          ) -> Iterator[dict[str, Any]]:
    try:
        from distributed import Client
    except ImportError as exc:        # pinned in requirements.txt; a broken install
        raise StudyError(f"--cluster needs the 'distributed' package: {exc}") from exc
    try:
        client = Client(cluster, timeout="20s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise StudyError(f"cannot reach the Dask scheduler at {cluster}: {exc}") from exc
    futures: list[Any] = []
    try:
        futures = client.map(run_point, list(points), key=[f"diffmem-point-{p['point_id']}"
                                                            for p in points], pure=False)
        pending = list(futures)
        while pending:
            if cancel is not None and cancel():
                raise SimulationCancelled("study cancelled")
            ready = [f for f in pending if f.done()]
            if not ready:
                time.sleep(POLL_S / 4)
                continue
            taken = {id(f) for f in ready}
            pending = [f for f in pending if id(f) not in taken]
            for fut in ready:
                yield fut.result()
    finally:
        if futures:
            client.cancel(futures)
        client.close()


def execute(points: Sequence[dict[str, Any]], *, workers: int | None = None,
            cluster: Any = None, cancel: CancelFn | None = None) -> Iterator[dict[str, Any]]:
    """Yield the result record of each point dictionary as it completes."""
    if not points:
        return iter(())
    if cluster is not None:
        return _dask(points, cluster, cancel)
    n = default_workers() if workers is None else int(workers)
    if n < 0:
        raise StudyError(f"workers = {n}: expected 0 (run here) or more")
    if n == 0 or len(points) == 1:
        return _inline(points, cancel)
    return _local(points, n, cancel)


def run_points(points: Iterable[Point], *, sink: ResultSink | None = None,
               workers: int | None = None, cluster: Any = None,
               progress: ProgressFn | None = None, cancel: CancelFn | None = None
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
        for record in execute(todo, workers=workers, cluster=cluster, cancel=cancel):
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
