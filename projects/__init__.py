"""HDF5 project files (open, atomic save, locking, schema and migrations); no Qt imports.

See :mod:`projects.schema` for the file layout and :mod:`projects.store` for the API.
"""
from projects.schema import SCHEMA_VERSION
from projects.store import (Project, ProjectError, ProjectInUse, ProjectTooNew, TraceSource,
                            simulate_source)

__all__ = ["SCHEMA_VERSION", "Project", "ProjectError", "ProjectInUse", "ProjectTooNew",
           "TraceSource", "simulate_source"]
