"""DDR4 (JESD79-4) as DRAMsim3 models it."""
from .base import DRAMSIM3_CONSTRAINTS, LEVELS_DDR, REFAB, Standard, dramsim3_commands, per_bank_refresh

STANDARD = Standard(
    name="DDR4", family="DDR", document="JESD79-4 (DRAMsim3's model)", levels=LEVELS_DDR,
    commands=dramsim3_commands(), constraints=DRAMSIM3_CONSTRAINTS,
    refresh=(REFAB, per_bank_refresh()), presets=("DDR4-3200", "DDR4-3200-8ch"),
    checker={"rd_wr_preamble": True})
