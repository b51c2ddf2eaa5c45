"""HBM3 (JESD238): 16 channels of two 32-bit pseudo-channels per stack, BL8, separate row
and column command buses, per-bank (REFpb) and all-bank (REFab) refresh.

Modelled with these HBM3 rules on top of the common ones:

* the command clock CK runs at a quarter of the pin data rate (1.6 GHz at 6.4 Gb/s; data
  on WDQS at twice CK, both edges), so a BL8 burst takes 2 CK cycles (BL / 4);
* each pseudo-channel is an engine channel (``bus_width = 32``; presets: 32 per stack);
  the two pseudo-channels of a channel share nothing the engine models;
* one row and one column command may issue in the same cycle (``hbm_dual_cmd``); ACT
  occupies the row command bus for two cycles (the next row command waits one more cycle);
* unlike DRAMsim3's HBM and HBM2, the file's ``columns`` are the physical columns (no x 2);
* REFpb refreshes one bank (``BANK_LEVEL_STAGGERED``, tRFCpb = ``tRFCb`` every ``tREFIb``
  = tREFI / banks); REFab uses tRFC every tREFI (3.9 us); at most 8 REFab may be postponed;
  ACT -> REFpb of another bank waits tRRD (JEDEC), not DRAMsim3's tRC.
"""
from .base import (jedec_refresh_bank_rules, ACT, DRAMSIM3_CONSTRAINTS, LEVELS_HBM, REFAB, Standard, dramsim3_commands,
                   per_bank_refresh)

STANDARD = Standard(
    name="HBM3", family="HBM", document="JESD238", levels=LEVELS_HBM,
    commands=dramsim3_commands(refresh_bank="REFpb", two_cycle=(ACT,)),
    constraints=jedec_refresh_bank_rules(DRAMSIM3_CONSTRAINTS), refresh=(REFAB, per_bank_refresh("REFpb")),
    presets=("HBM3-6400",), burst_divisor=4, split_rcd=True, dual_command=True, dramsim3=False,
    bl_choices=(8,))
