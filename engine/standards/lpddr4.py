"""LPDDR4 (JESD209-4) as DRAMsim3 models it (tPPD between precharges)."""
from .base import (DRAMSIM3_CONSTRAINTS, LEVELS_DDR, PRECHARGE_SPACING, REFAB, Standard,
                   dramsim3_commands, per_bank_refresh)

STANDARD = Standard(
    name="LPDDR4", family="LPDDR", document="JESD209-4 (DRAMsim3's model)", levels=LEVELS_DDR,
    commands=dramsim3_commands(), constraints=DRAMSIM3_CONSTRAINTS + PRECHARGE_SPACING,
    refresh=(REFAB, per_bank_refresh()), presets=("LPDDR4-2400", "LPDDR4-3200"),
    checker={"dqs_skew": True, "tPPD": True})
