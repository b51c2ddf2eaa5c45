"""Studies: parameter sweeps over the simulator, their analyses and design-review reports.

No Qt here. Modules: :mod:`spec` (inputs, setup, points and their ids), :mod:`jobs` (one
point's simulation and result record), :mod:`runner` (local processes or Dask), :mod:`sinks`
(results folder, project), :mod:`fits` (least squares, ratios), :mod:`catalog` (the shipped
studies), :mod:`report` (HTML and PDF), :mod:`run` (run a study end to end),
:mod:`synthetic` (small synthetic training-step traces for tests and examples).
"""
from engine.studies.catalog import STUDIES, Analysis, get_study
from engine.studies.report import render_report
from engine.studies.run import StudyOutcome, load_project_study, load_results, run_study
from engine.studies.spec import Point, StudyError, StudySetup, TraceInput

__all__ = ["STUDIES", "Analysis", "Point", "StudyError", "StudyOutcome", "StudySetup",
           "TraceInput", "get_study", "load_project_study", "load_results", "render_report",
           "run_study"]
