"""Hong & Kim hardware parameters from a board characterization (issue 11 §2).

The paper measured ``Mem_LD`` and the departure delays with microbenchmarks on its own
boards; :func:`~perfml.closed_form.hongkim.hongkim_hardware_for` applies the GTX 280
values to every board. :func:`characterized_hardware` derives them from what the
board's characterization holds instead:

``Mem_LD``
    the board's ``dram_latency`` in cycles (measured, calibrated or published tier)
    where the characterization has one; otherwise the value already there (the paper's).
``Mem_Bandwidth``
    the achieved ``dram_bandwidth`` (an ``estimate`` of those tiers), else the spec.
``Departure_del_coal``
    seed 002 (line 240, ``MWP_Without_BW_full = Mem_L / Departure_delay``) defines the
    departure delay as the spacing of consecutive memory warp requests of one SM. When
    the DRAM is the bottleneck an SM's requests leave no faster than its share of the
    achieved bandwidth serves them::

        Departure_del_coal = Load_bytes_per_warp / (BW_achieved / (#SM x Freq))   [cycles]

    (a coalesced warp request moves ``Load_bytes_per_warp`` bytes, seed 002 line 238).
``Departure_del_uncoal``
    the same spacing for one transaction of an uncoalesced warp instruction (seed 002
    line 246), which moves one :data:`TRANSACTION_BYTES`-byte segment::

        Departure_del_uncoal = TRANSACTION_BYTES / (BW_achieved / (#SM x Freq))   [cycles]

The departure delays are derived only when the characterization has an achieved
bandwidth (not from the datasheet peak: that is what the default hardware stands for).
This is our reading of the slides' definitions, not a formula of the paper.
"""

from __future__ import annotations

from dataclasses import replace

from perfml.closed_form.hongkim._hardware import HongKimHardware

__all__ = ["TRANSACTION_BYTES", "characterized_hardware"]

#: bytes of one memory transaction of an uncoalesced access (a 32-byte DRAM segment/sector)
TRANSACTION_BYTES = 32.0


def characterized_hardware(hardware: HongKimHardware, characterization) -> tuple[HongKimHardware, dict[str, str]]:
    """``hardware`` with Mem_LD, Mem_Bandwidth and departure delays from ``characterization``.

    Returns
    -------
    (HongKimHardware, dict)
        The parameters, and per changed field the tier it came from (fields absent from
        the dict keep the value of ``hardware``).
    """
    from perfml.closed_form._characterized import ACHIEVED_TIERS

    changes: dict[str, float] = {}
    tiers: dict[str, str] = {}
    if characterization is None:  # a board the caller has no characterization of
        return hardware, tiers
    latency = characterization.best("dram_latency", "cycles", tiers=ACHIEVED_TIERS)
    if latency is not None:
        changes["mem_ld"] = latency.to_unit("cycles")
        tiers["mem_ld"] = latency.tier
    bandwidth = characterization.best("dram_bandwidth", "B/s", tiers=ACHIEVED_TIERS, bounds=("estimate",))
    if bandwidth is not None:
        bw = bandwidth.to_unit("B/s")
        bytes_per_cycle_per_sm = bw / (hardware.n_sm * hardware.freq_ghz * 1e9)
        changes["mem_bandwidth_gbs"] = bw / 1e9
        changes["departure_del_coal"] = hardware.load_bytes_per_warp / bytes_per_cycle_per_sm
        changes["departure_del_uncoal"] = TRANSACTION_BYTES / bytes_per_cycle_per_sm
        tiers.update(dict.fromkeys(("mem_bandwidth_gbs", "departure_del_coal", "departure_del_uncoal"), bandwidth.tier))
    if not changes:
        return hardware, tiers
    source = f"{hardware.source}; {', '.join(sorted(changes))} from the characterization of {characterization.board}"
    return replace(hardware, **changes, source=source), tiers
