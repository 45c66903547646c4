"""The example descriptions shipped in ``perfml/descriptions/cumapz/``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from perfml.cumapz.description import KernelDescription, load_description
from perfml.errors import KernelDescriptionError

__all__ = ["examples_dir", "list_examples", "example_path", "resolve_description"]


def examples_dir() -> Path:
    """Directory of the shipped CuMAPz descriptions."""
    return Path(str(resources.files("perfml") / "descriptions" / "cumapz"))


def list_examples() -> list[str]:
    """Names (file stems) of the shipped descriptions, sorted."""
    return sorted(p.stem for p in examples_dir().glob("*.toml"))


def example_path(name: str) -> Path:
    """Path of a shipped description by name."""
    path = examples_dir() / f"{name}.toml"
    if not path.is_file():
        raise KernelDescriptionError(
            f"no shipped CuMAPz description named {name!r}; shipped ones are "
            f"{', '.join(list_examples())}"
        )
    return path


def resolve_description(name_or_path: str | Path) -> KernelDescription:
    """Load a description from a file path, or a shipped one by name."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        return load_description(p)
    return load_description(example_path(str(name_or_path)))
