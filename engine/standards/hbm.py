"""HBM (JESD235) as DRAMsim3 models it: row and column command buses, columns count x 2."""
from .base import DRAMSIM3_CONSTRAINTS, LEVELS_DDR, REFAB, Standard, dramsim3_commands, per_bank_refresh

STANDARD = Standard(
    name="HBM", family="HBM", document="JESD235 (DRAMsim3's model)", levels=LEVELS_DDR,
    commands=dramsim3_commands(), constraints=DRAMSIM3_CONSTRAINTS,
    refresh=(REFAB, per_bank_refresh()), column_scale="2", split_rcd=True, dual_command=True)
