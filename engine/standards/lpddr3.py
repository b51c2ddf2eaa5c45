"""LPDDR3 (JESD209-3) as DRAMsim3 models it."""
from .base import DRAMSIM3_CONSTRAINTS, LEVELS_DDR, REFAB, Standard, dramsim3_commands, per_bank_refresh

STANDARD = Standard(
    name="LPDDR3", family="LPDDR", document="JESD209-3 (DRAMsim3's model)", levels=LEVELS_DDR,
    commands=dramsim3_commands(), constraints=DRAMSIM3_CONSTRAINTS,
    refresh=(REFAB, per_bank_refresh()))
