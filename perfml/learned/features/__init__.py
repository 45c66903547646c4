"""Features of a runtime row, built without leaking the target board's measurements.

One transformer per feature group, combined by :class:`FeatureBuilder`:

* launch (:mod:`.launch`): block and grid dims per row (the row's own, else the
  description's default);
* descriptors (:mod:`.descriptors`): ``desc_*`` work counts from the kernel description;
* boards (:mod:`.boards`): ``board_*`` registry specifications and ``rel_*`` differences
  from the other training boards;
* closed-form and transfer (:mod:`.closed_form`): ``bsp_*``, ``roof_*``, ``base_log_t``,
  ``xfer_*``, offsets cross-fitted over the *other* training boards;
* occupancy (:mod:`.occupancy`): ``occ_*`` from the registry's occupancy calculator;
* profiles (:mod:`.profiles`): ``prof_*`` nvprof counters of the same run on the other
  training boards;
* app identity: ``app=<id>`` indicators.
"""

from perfml.learned.features._common import (
    BASELINES,
    MONOTONE_INCREASING,
    PROFILE_KEY,
    PROFILE_METRICS,
    REQUIRED,
    RUN_KEY,
    architecture,
)
from perfml.learned.features._common import architecture as _architecture  # former private name, kept as alias
from perfml.learned.features.boards import BoardFeatures
from perfml.learned.features.builder import FeatureBuilder, RowBlocks
from perfml.learned.features.closed_form import ClosedFormFeatures, closed_form_logs
from perfml.learned.features.descriptors import descriptor_features
from perfml.learned.features.launch import launch_frame
from perfml.learned.features.occupancy import OccupancyFeatures
from perfml.learned.features.profiles import ProfileFeatures

__all__ = [
    "BASELINES",
    "BoardFeatures",
    "ClosedFormFeatures",
    "FeatureBuilder",
    "MONOTONE_INCREASING",
    "OccupancyFeatures",
    "PROFILE_KEY",
    "PROFILE_METRICS",
    "ProfileFeatures",
    "REQUIRED",
    "RUN_KEY",
    "RowBlocks",
    "architecture",
    "closed_form_logs",
    "descriptor_features",
    "launch_frame",
]
