"""Loaders of the measured data (the *data home*), checked against their schemas."""

from perfml.datasets._home import ENV_VAR, DataHome, as_data_home, check_data_home, find_data_home, resolve_data_home
from perfml.datasets._dlops import (
    DLOPS_OP_DIMS,
    DLOPS_OPS,
    DLOPS_SCHEMAS,
    DLOPS_SPLITS,
    load_dlops_device_configs,
    load_dlops_published_errors,
    load_dlops_runtimes,
    load_dlops_table,
)
from perfml.datasets._schema import TableSchema, validate
from perfml.datasets._tables import SCHEMAS
from perfml.datasets._loaders import (
    load_board_specs_long,
    load_boards_table,
    load_bsp_inputs,
    load_bsp_published_predictions,
    load_bspgpu_script_inputs,
    load_profiles_nca,
    load_profiles_rodinia,
    load_published_accuracy,
    load_runtime_samples,
    load_runtimes,
    load_table,
)
from perfml.datasets._manifest import MAX_KERNEL_MS, MIN_KERNEL_MS

__all__ = [
    "MAX_KERNEL_MS",
    "MIN_KERNEL_MS",
    "DataHome",
    "ENV_VAR",
    "SCHEMAS",
    "as_data_home",
    "check_data_home",
    "find_data_home",
    "TableSchema",
    "load_board_specs_long",
    "load_boards_table",
    "load_bsp_inputs",
    "load_bsp_published_predictions",
    "load_bspgpu_script_inputs",
    "load_profiles_nca",
    "load_profiles_rodinia",
    "load_published_accuracy",
    "load_runtime_samples",
    "load_runtimes",
    "load_table",
    "resolve_data_home",
    "validate",
    "DLOPS_OP_DIMS",
    "DLOPS_OPS",
    "DLOPS_SCHEMAS",
    "DLOPS_SPLITS",
    "load_dlops_device_configs",
    "load_dlops_published_errors",
    "load_dlops_runtimes",
    "load_dlops_table",
]
