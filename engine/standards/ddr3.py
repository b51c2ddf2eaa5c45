"""DDR3 (JESD79-3) as DRAMsim3 models it."""
from .base import DRAMSIM3_CONSTRAINTS, LEVELS_DDR, REFAB, Standard, dramsim3_commands, per_bank_refresh

STANDARD = Standard(
    name="DDR3", family="DDR", document="JESD79-3 (DRAMsim3's model)", levels=LEVELS_DDR,
    commands=dramsim3_commands(), constraints=DRAMSIM3_CONSTRAINTS,
    refresh=(REFAB, per_bank_refresh()))
