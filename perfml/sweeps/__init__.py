"""Sweeps: specs (``sweeps/*.toml``), their plans, the runner and result sets."""

from __future__ import annotations

from perfml.sweeps.results import SCHEMA_VERSION, ResultSet, make_row, point_id
from perfml.sweeps.runner import SweepFailedPointsError, SweepReport, run_plans, run_sweeps
from perfml.sweeps.spec import (
    FamilyRun,
    PlannedPoint,
    SweepPlan,
    SweepSpec,
    default_spec_paths,
    load_spec,
    load_specs,
    parse_spec,
    plan_spec,
    plan_specs,
)

__all__ = [
    "SCHEMA_VERSION",
    "FamilyRun",
    "PlannedPoint",
    "ResultSet",
    "SweepFailedPointsError",
    "SweepPlan",
    "SweepReport",
    "SweepSpec",
    "default_spec_paths",
    "load_spec",
    "load_specs",
    "make_row",
    "parse_spec",
    "plan_spec",
    "plan_specs",
    "point_id",
    "run_plans",
    "run_sweeps",
]
