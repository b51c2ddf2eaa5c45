"""HMC as DRAMsim3 models its vaults (the burst length follows from block_size)."""
from .base import DRAMSIM3_CONSTRAINTS, LEVELS_DDR, REFAB, Standard, dramsim3_commands, per_bank_refresh

STANDARD = Standard(
    name="HMC", family="HMC", document="HMC 2.1 (DRAMsim3's model)", levels=LEVELS_DDR,
    commands=dramsim3_commands(), constraints=DRAMSIM3_CONSTRAINTS,
    refresh=(REFAB, per_bank_refresh()))
