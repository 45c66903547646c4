"""Reading experiment results back from MLflow."""

from __future__ import annotations

import pandas as pd

from perfml.errors import PerfmlError


def latest_summaries(experiment: str | None = None) -> dict[str, pd.DataFrame]:
    """The ``summary.csv`` of the latest run of each perfml experiment (or of ``experiment``).

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
        runs = client.search_runs([exp.experiment_id], filter_string="tags.`perfml.kind` = 'experiment' and attributes.status = 'FINISHED'",
                                  order_by=["attributes.start_time DESC"], max_results=1)
        if not runs:
            continue
        path = client.download_artifacts(runs[0].info.run_id, "summary.csv")
        out[exp.name] = pd.read_csv(path)
    if not out:
        raise PerfmlError(f"no finished perfml experiment runs in MLflow ({mlflow.get_tracking_uri()}); run `perfml experiment run FILE` first")
    return out
