"""Physical limits of characterized values (issue 11 §5).

An achieved value (tiers ``published``, ``measured``, ``calibrated``) is compared with
the specification of the same quantity in the same dimension: the ``spec`` values of the
characterization, and a paper's own "Spec." figure carried in a published value's
provenance (``paper_spec``, same unit as the value). Policy, documented here and in the
file's warnings:

* above :data:`MAX_OVER_SPEC` (1.5) x the specification: refused with
  :class:`~perfml.errors.PhysicalLimitError` (no caching or clock boost explains it; the
  work count, the unit or the board is wrong);
* above :data:`WARN_OVER_SPEC` (1.05) x the specification: kept, with an explicit warning
  in the value (e.g. an L2-resident working set, or a factory-overclocked card);
* non-positive or non-finite values never get this far: :class:`CharacterizedValue`
  refuses them.
"""

from __future__ import annotations

from collections.abc import Iterable

from perfml.characterize.values import CharacterizedValue
from perfml.errors import PhysicalLimitError

__all__ = ["MAX_OVER_SPEC", "WARN_OVER_SPEC", "check_physical_limits"]

#: an achieved value above this multiple of the specification is refused
MAX_OVER_SPEC = 1.5
#: an achieved value above this multiple of the specification carries a warning
WARN_OVER_SPEC = 1.05


def _references(value: CharacterizedValue, specs: list[CharacterizedValue]) -> list[tuple[float, str]]:
    """(specification in the value's unit, where it comes from) for one achieved value."""
    refs = [
        (spec.to_unit(value.unit), spec.source)
        for spec in specs
        if spec.quantity == value.quantity and spec.dimension == value.dimension
    ]
    paper_spec = value.provenance.get("paper_spec")
    if isinstance(paper_spec, (int, float)) and paper_spec > 0:
        refs.append((float(paper_spec), f"the paper's Spec. figure ({value.provenance.get('table', '')})"))
    return refs


def check_physical_limits(values: Iterable[CharacterizedValue]) -> tuple[CharacterizedValue, ...]:
    """Check every achieved value against the specifications among ``values``.

    Returns
    -------
    tuple of CharacterizedValue
        The values, those between 1.05x and 1.5x of a specification with a warning added
        (once: a value that already carries the warning is not warned twice).

    Raises
    ------
    PhysicalLimitError
        An achieved value above 1.5 x its specification.
    """
    values = list(values)
    specs = [v for v in values if v.tier == "spec"]
    out = []
    for value in values:
        if value.tier == "spec":
            out.append(value)
            continue
        for spec, where in _references(value, specs):
            ratio = value.value / spec
            if ratio > MAX_OVER_SPEC:
                raise PhysicalLimitError(
                    f"{value.quantity} ({value.tier}) = {value.value:.4g} {value.unit} is {ratio:.2f}x the "
                    f"specification {spec:.4g} {value.unit} from {where}; more than {MAX_OVER_SPEC}x is not "
                    "physical: check the work counts, the time unit and the board of the rows "
                    f"({value.source})"
                )
            if ratio > WARN_OVER_SPEC:
                note = (
                    f"achieved {ratio:.2f}x the specification ({spec:.4g} {value.unit}, {where}): "
                    "cache-resident data or a higher clock than specified"
                )
                if note not in value.warnings:
                    value = value.with_warnings(note)
        out.append(value)
    return tuple(out)
