"""Read a board characterization: a JSON file, or a result set characterized on the fly."""

from __future__ import annotations

import json
import os
from pathlib import Path

from perfml.characterize.build import characterize_results
from perfml.characterize.characterization import Characterization
from perfml.errors import ResultSchemaError


def load_characterization(path: str | os.PathLike[str]) -> Characterization:
    """Read a characterization written by ``perfml characterize RESULTS --out FILE``.

    A result set directory is also accepted: it is characterized on the fly.
    """
    path = Path(path)
    if path.is_dir():
        return characterize_results(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ResultSchemaError(
            f"{path} does not exist; write it with `perfml characterize RESULTS --out {path}`"
        ) from None
    except json.JSONDecodeError as exc:
        raise ResultSchemaError(f"{path} is not valid JSON ({exc})") from None
    return Characterization.from_dict(data)
