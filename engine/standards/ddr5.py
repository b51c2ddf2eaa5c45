"""DDR5 (JESD79-5): two independent 32-bit sub-channels per DIMM, BL16, 8 bank groups,
all-bank (REFab) and same-bank (REFsb) refresh, two-cycle ACT / RD / WR commands.

Modelled as the engine models every DDR standard, with these DDR5 rules on top:

* a DIMM's two sub-channels are two engine channels of ``bus_width = 32`` (presets: 2
  channels per DIMM);
* ACT, RD, RDA, WR and WRA occupy the command bus for two cycles (JESD79-5 §4: "two-cycle
  commands"), so no command of the sub-channel may issue in the following cycle;
* WR -> WR in the same bank group is ``tCCD_L_WR`` (longer than RD -> RD's ``tCCD_L``);
* REFsb refreshes bank ``b`` of every bank group at once (``refresh_policy =
  SAME_BANK_STAGGERED``: banks b = 0, 1, ... in turn, one REFsb every ``tREFIb`` =
  tREFI / banks_per_group); its cycle time is ``tRFCb`` (tRFCsb) and another bank may be
  activated ``tREFSBRD`` after it; REFab (``RANK_LEVEL_*``) uses ``tRFC`` (tRFC1) every
  ``tREFI`` (3.9 us);
* ACT -> REFsb of other banks waits tRRD (JEDEC), not DRAMsim3's tRC;
* DDR5 lets a controller postpone at most 4 REFab commands (JESD79-5, refresh command
  scheduling), so the checker demands no gap over 5 x tREFI.
"""
from .base import (jedec_refresh_bank_rules, ACT, DRAMSIM3_CONSTRAINTS, LEVELS_DDR, PRECHARGE_SPACING, RD,
                   RDP, REFAB, REFB, WR, WRP, RefreshKind, Standard, dramsim3_commands,
                   refb_other_act, refresh_to_other_bank_rules)

_CONSTRAINTS = refresh_to_other_bank_rules(DRAMSIM3_CONSTRAINTS) + PRECHARGE_SPACING

REFSB = RefreshKind("REFsb", REFB, "same bank of every bank group", "tRFCb", "tREFIb",
                    ("SAME_BANK_STAGGERED",))


def _wr_wr_l(cfg, d):
    return max(cfg.burst_cycle, cfg.tCCD_L_WR or cfg.tCCD_L)


STANDARD = Standard(
    name="DDR5", family="DDR", document="JESD79-5", levels=LEVELS_DDR,
    commands=dramsim3_commands(refresh_bank="REFsb", two_cycle=(ACT, RD, RDP, WR, WRP)),
    constraints=jedec_refresh_bank_rules(_CONSTRAINTS), refresh=(REFAB, REFSB),
    presets=("DDR5-3200AN", "DDR5-4800B"), dramsim3=False, bl_choices=(16,),
    max_postponed_refresh=4,
    delay_rules={"wr_wr_l": _wr_wr_l, "refb_other_act": refb_other_act},
    checker={"tCCD_L_WR": True, "same_bank_refresh": True, "tPPD": True},
    extra_fields=("tCCD_L_WR", "tREFSBRD"))
