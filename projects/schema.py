"""Layout of a DiffMem Studio project file (one HDF5 file per project) and its migrations.

No Qt here (or anywhere in ``projects/``): the GUI reaches projects through :mod:`projects.store`.

Layout, schema version 1 (integers; :data:`SCHEMA_VERSION`)::

    /                               NX_class="NXroot", schema_version=1, app_version, created
    /configs                        NX_class="NXcollection"
    /configs/<name>                 NX_class="NXcollection",
                                    config=<MemoryConfig.to_dict() as a JSON string>,
                                    key attrs for viewers: protocol, channels, ranks (derived),
                                    tCK, created
    /traces                         NX_class="NXcollection"
    /traces/<name>                  embedded:  storage="embedded" + the trace group written by
                                               engine.trace.write_hdf5(..., group=...)
                                               (format="diffmem-trace", datasets addr, cycle,
                                               is_write, stream; chunked and compressed)
                                    external:  storage="external", path=<file>, fmt, and
                                               summary attrs
                                    both: summary=<engine.trace.trace_summary() JSON>,
                                    source=<original file name>, created
    /runs                           NX_class="NXcollection"
    /runs/<run_id>                  NX_class="NXentry", kind="simulation", config_name,
                                    config=<snapshot JSON>, trace_name, options=<JSON>,
                                    created, app_version, summary=<JSON>, channels=<JSON>
    /runs/<run_id>/epochs           NX_class="NXdata", signal, axes;
                                    one 1-D dataset per scalar epoch field (start, end,
                                    reads_done, writes_done, average_read_latency, act, pre,
                                    ref, row_hit_rate, bandwidth_GBps) and bank_utilisation
                                    [n_epochs, channels, ranks*banks]
    /runs/<run_id>/per_bank/<name>  [channels, ranks, banks] arrays (Stats.per_bank)
    /runs/<run_id>/read_latency_hist  [cycles] counts
    /studies                        NX_class="NXcollection"
    /studies/<name>                 NX_class="NXentry", kind="study", study=<study type, e.g.
                                    "timing">, setup=<StudySetup JSON>, points=<JSON list of
                                    the points, ids and tags included>, created, app_version
    /studies/<name>/results/<point_id>
                                    scalar string dataset: the result record JSON of one point
                                    (engine.studies.jobs.run_point + tags), attribute status
                                    ("ok" | "error"); written as each point finishes
    /optimizer_runs                 NX_class="NXcollection"
    /optimizer_runs/<run_id>        NX_class="NXentry", kind="optimizer", settings=<JSON:
                                    network, hardware, method, seed, budget>, schedule=<the
                                    schedule file's JSON (optimizer.methods.schedule_json)>,
                                    created, app_version
    /optimizer_runs/<run_id>/history/<field>
                                    [steps] progress curves: step, evaluations, elapsed_s,
                                    loss, edp, best_edp, tau, violation, fused

Everything is data: numbers in datasets and attributes, structured values as JSON strings.
Nothing is pickled.

Schema 0 (files of early development builds, kept readable through :data:`MIGRATIONS`)::

    /                               schema_version=0, app_version, created (no NX_class)
    /configs/<name>                 one attribute per MemoryConfig.to_dict() key (no JSON)
    /traces/<name>                  as in schema 1, without the storage attribute when
                                    embedded
    /simulations/<run_id>           attrs config (name), trace (name), options (JSON),
                                    summary (JSON), created; epochs/, per_bank/,
                                    read_latency_hist as in schema 1
    (no /studies, /optimizer_runs)

Migrations are an ordered list: ``MIGRATIONS[n]`` turns an open, writable schema-``n`` file
into a schema-``n+1`` file in place.  :func:`migrate` runs them in order.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Callable

from engine.fileio import json_default

log = logging.getLogger(__name__)

#: The schema this build writes.
SCHEMA_VERSION = 1

# Root attributes.
ATTR_SCHEMA = "schema_version"
ATTR_APP_VERSION = "app_version"
ATTR_CREATED = "created"
ATTR_NX_CLASS = "NX_class"
ROOT_NX_CLASS = "NXroot"
REQUIRED_ROOT_ATTRS = (ATTR_SCHEMA, ATTR_APP_VERSION, ATTR_CREATED)

# Top-level groups.
CONFIGS = "configs"
TRACES = "traces"
RUNS = "runs"
STUDIES = "studies"
OPTIMIZER_RUNS = "optimizer_runs"
TOP_GROUPS = (CONFIGS, TRACES, RUNS, STUDIES, OPTIMIZER_RUNS)
#: Entity kinds accepted by Project.rename/delete/duplicate -> their group.
KINDS = {"config": CONFIGS, "trace": TRACES, "run": RUNS, "study": STUDIES,
         "optimizer_run": OPTIMIZER_RUNS}

# Config attributes.
CONFIG_JSON = "config"
CONFIG_KEY_ATTRS = ("protocol", "channels", "tCK")

# Trace attributes.
TRACE_STORAGE = "storage"          # "embedded" | "external"
TRACE_PATH = "path"                # external only
TRACE_FMT = "fmt"                  # external only
TRACE_SUMMARY = "summary"          # JSON of engine.trace.trace_summary()
TRACE_SOURCE = "source"

# Run attributes and members.
RUN_KIND = "kind"
RUN_KIND_SIMULATION = "simulation"
RUN_CONFIG_NAME = "config_name"
RUN_CONFIG = "config"
RUN_TRACE_NAME = "trace_name"
RUN_OPTIONS = "options"
RUN_SUMMARY = "summary"
RUN_CHANNELS = "channels"
RUN_EPOCHS = "epochs"
RUN_PER_BANK = "per_bank"
RUN_HIST = "read_latency_hist"
EPOCH_FIELDS = ("start", "end", "reads_done", "writes_done", "average_read_latency",
                "row_hit_rate", "bandwidth_GBps")
EPOCH_BANK_UTILISATION = "bank_utilisation"

# Optimiser runs (optimizer.methods).
OPT_KIND = "optimizer"
OPT_SETTINGS = "settings"
OPT_SCHEDULE = "schedule"
OPT_HISTORY = "history"
OPT_HISTORY_FIELDS = ("step", "evaluations", "elapsed_s", "loss", "edp", "best_edp", "tau",
                      "violation", "fused")

# Study attributes and members (engine.studies).
STUDY_KIND = "study"               # value of the kind attribute
STUDY_TYPE = "study"               # which shipped study (timing, architecture, ...)
STUDY_SETUP = "setup"
STUDY_POINTS = "points"
STUDY_RESULTS = "results"
STUDY_STATUS = "status"


def to_json(value: Any) -> str:
    """JSON text for an attribute (numpy scalars and arrays become plain numbers and lists)."""
    return json.dumps(value, default=json_default, sort_keys=False)


def attr_str(value: Any) -> str:
    """An HDF5 string attribute as ``str`` (h5py may hand back bytes)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


# --------------------------------------------------------------------------------------------
# Migrations
# --------------------------------------------------------------------------------------------

def _v0_to_v1(h5: Any) -> None:
    """Schema 0 -> 1: configs to JSON, /simulations -> /runs, NeXus attributes, reserved
    groups."""
    import h5py
    import numpy as np
    h5.attrs[ATTR_NX_CLASS] = ROOT_NX_CLASS
    configs = h5.require_group(CONFIGS)
    snapshots: dict[str, str] = {}
    for name, g in configs.items():
        data = {}
        for key, value in g.attrs.items():
            if isinstance(value, np.generic):
                value = value.item()
            elif isinstance(value, bytes):
                value = value.decode("utf-8")
            data[key] = value
        for key in list(g.attrs):
            del g.attrs[key]
        text = to_json(data)
        snapshots[name] = text
        g.attrs[CONFIG_JSON] = text
        g.attrs[ATTR_NX_CLASS] = "NXcollection"
        for key in CONFIG_KEY_ATTRS:
            if key in data and data[key] is not None:
                g.attrs[key] = data[key]
    traces = h5.require_group(TRACES)
    for name, g in traces.items():
        if isinstance(g, h5py.Group) and TRACE_STORAGE not in g.attrs:
            g.attrs[TRACE_STORAGE] = "external" if TRACE_PATH in g.attrs else "embedded"
    runs = h5.require_group(RUNS)
    if "simulations" in h5:
        for run_id in list(h5["simulations"]):
            h5.move(f"simulations/{run_id}", f"{RUNS}/{run_id}")
            g = runs[run_id]
            cfg_name = attr_str(g.attrs.pop("config", ""))
            trace_name = attr_str(g.attrs.pop("trace", ""))
            g.attrs[RUN_KIND] = RUN_KIND_SIMULATION
            g.attrs[RUN_CONFIG_NAME] = cfg_name
            g.attrs[RUN_CONFIG] = snapshots.get(cfg_name, "{}")
            g.attrs[RUN_TRACE_NAME] = trace_name
            g.attrs[ATTR_APP_VERSION] = attr_str(h5.attrs.get(ATTR_APP_VERSION, ""))
            g.attrs.setdefault(RUN_OPTIONS, "{}")
            g.attrs.setdefault(RUN_CHANNELS, "[]")
            g.attrs[ATTR_NX_CLASS] = "NXentry"
            if RUN_EPOCHS in g:
                g[RUN_EPOCHS].attrs[ATTR_NX_CLASS] = "NXdata"
        del h5["simulations"]
    for name in TOP_GROUPS:
        h5.require_group(name).attrs[ATTR_NX_CLASS] = "NXcollection"


#: ``MIGRATIONS[n]`` upgrades schema n to n + 1, in place, on a writable h5py.File.
MIGRATIONS: list[Callable[[Any], None]] = [_v0_to_v1]
assert len(MIGRATIONS) == SCHEMA_VERSION


def migrate(h5: Any, from_version: int) -> int:
    """Run the migrations from ``from_version`` up to :data:`SCHEMA_VERSION`; returns the
    number applied."""
    applied = 0
    for version in range(from_version, SCHEMA_VERSION):
        log.info("migrating project %s from schema %d to %d", h5.filename, version,
                 version + 1)
        MIGRATIONS[version](h5)
        h5.attrs[ATTR_SCHEMA] = version + 1
        applied += 1
    return applied
