"""GDDR6 (JESD250) as DRAMsim3 models it: a burst takes BL/16 cycles, columns count x BL."""
from .base import (DRAMSIM3_CONSTRAINTS, LEVELS_DDR, PRECHARGE_SPACING, REFAB, Standard,
                   dramsim3_commands, per_bank_refresh)

STANDARD = Standard(
    name="GDDR6", family="GDDR", document="JESD250 (DRAMsim3's model)", levels=LEVELS_DDR,
    commands=dramsim3_commands(), constraints=DRAMSIM3_CONSTRAINTS + PRECHARGE_SPACING,
    refresh=(REFAB, per_bank_refresh()), presets=("GDDR6",), burst_divisor=16,
    column_scale="BL", split_rcd=True, checker={"tPPD": True})
