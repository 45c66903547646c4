"""Reading experiment results back from MLflow."""

from __future__ import annotations

import pandas as pd

from perfml.errors import PerfmlError


def latest_summaries(experiment: str | None = None) -> dict[str, pd.DataFrame]:
    """The side-by-side table of the latest run of each perfml experiment (or of ``experiment``).

    For comparisons it is the run's ``summary.csv``; for the seed 003 Table II
    experiment, its ``table2_script.csv``.

    Raises
    ------
    PerfmlError
        If MLflow holds no such experiment or no finished run of it.
    """
    import mlflow
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    if experiment is not None:
        found = client.get_experiment_by_name(experiment)
        if found is None:
            names = sorted(e.name for e in client.search_experiments())
            raise PerfmlError(
                f"MLflow ({mlflow.get_tracking_uri()}) has no experiment {experiment!r}; known: {', '.join(names) or 'none'}; "
                "run `perfml experiment run experiments/<name>.toml` first"
            )
        experiments = [found]
    else:
        experiments = [e for e in client.search_experiments() if e.name != "Default"]
    out = {}
    for exp in experiments:
        runs = client.search_runs(
            [exp.experiment_id], filter_string="attributes.status = 'FINISHED'", order_by=["attributes.start_time DESC"]
        )
        runs = [r for r in runs if r.data.tags.get("perfml.kind") in ("experiment", "bsp_table2")]
        if not runs:
            continue
        run = runs[0]
        artifact = "summary.csv" if run.data.tags.get("perfml.kind") == "experiment" else "table2_script.csv"
        out[exp.name] = pd.read_csv(client.download_artifacts(run.info.run_id, artifact))
    if not out:
        raise PerfmlError(f"no finished perfml experiment runs in MLflow ({mlflow.get_tracking_uri()}); run `perfml experiment run FILE` first")
    return out
