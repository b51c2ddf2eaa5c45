"""LPDDR5 (JESD209-5): WCK data clock at a 2:1 or 4:1 ratio to CK, bank-group mode (4 bank
groups x 4 banks) or 16-bank mode, per-bank (REFpb) and all-bank (REFab) refresh.

Modelled with these LPDDR5 rules on top of the common ones:

* timing in CK cycles (tCK = 1.25 ns at 6400 MT/s with WCK:CK = 4:1); a burst of BL beats
  occupies BL / (2 x wck_ratio) CK cycles of the data bus;
* bank-group mode: ``bankgroup_enable = true`` with 4 x 4 banks (tCCD_L / tCCD_S, tWTR_L /
  tWTR_S); 16-bank mode: ``bankgroup_enable = false`` with 16 banks (JEDEC allows it up to
  3200 MT/s), where every column command is tCCD apart;
* activation takes two commands, ACT-1 and ACT-2, on consecutive CK cycles: the engine's ACT
  occupies the command bus for two cycles;
* REFpb refreshes one bank (``BANK_LEVEL_STAGGERED``, tRFCpb = ``tRFCb`` every ``tREFIb``);
  JEDEC's REFpb refreshes a bank pair (b, b+8) in 16-bank mode: the presets give tREFIb =
  tREFI / 16, so each bank is still refreshed every tREFI;
* WCK2CK synchronisation (CAS-WS) is not modelled: the presets assume WCK always-on mode,
  a JEDEC option, in which no CAS command precedes reads and writes;
* tPPD applies between precharges; at most 8 REFab may be postponed;
* ACT -> REFpb of another bank waits tRRD (JEDEC), not DRAMsim3's tRC (see
  base.jedec_refresh_bank_rules).
"""
from .base import (jedec_refresh_bank_rules, ACT, DRAMSIM3_CONSTRAINTS, LEVELS_DDR, PRECHARGE_SPACING, REFAB, Standard,
                   dramsim3_commands, per_bank_refresh)

STANDARD = Standard(
    name="LPDDR5", family="LPDDR", document="JESD209-5", levels=LEVELS_DDR,
    commands=dramsim3_commands(refresh_bank="REFpb", two_cycle=(ACT,)),
    constraints=jedec_refresh_bank_rules(DRAMSIM3_CONSTRAINTS + PRECHARGE_SPACING),
    refresh=(REFAB, per_bank_refresh("REFpb")),
    presets=("LPDDR5-6400", "LPDDR5-3200-16B"), wck_clock=True, dramsim3=False,
    bl_choices=(16, 32), extra_fields=("wck_ratio",), checker={"tPPD": True})
