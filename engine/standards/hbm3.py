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
* ACT -> REFpb of another bank waits tRRD (JEDEC), not DRAMsim3's tRC; REFpb -> ACT of
  another bank waits JESD238's tRREFD (the ``tREFSBRD`` field);
* PRE -> PRE waits tPPD (new in HBM3);
* READ -> WRITE is JESD238's tRTW: RL + burst - WL + ``tRTRS``, so the preset's tRTRS is
  tRTW - (RL + burst - WL) (one rank per pseudo-channel: tRTRS is no rank switch there).

The preset's timings are JESD238's as Ramulator 2.1 gives them
(``packaging/make_jedec_presets.py`` holds the table, with where each value comes from).
Differences from JESD238 (and from Ramulator 2.1's HBM3), by design or for want of a mechanism:

* stack IDs (SIDs, 8-high and 12-high stacks) are not modelled: the preset is one SID
  (Ramulator 2.1's ``HBM3_4Gb``), so tCCDR (RD -> RD to another SID) never applies;
* tRC is derived as tRAS + tRP: the preset's tRAS is tRC - tRP = 46, one cycle over
  JESD238's tRAS minimum of 45, so that ACT -> ACT of a bank is JESD238's tRC = 72;
* commands are CK-granular: ACT takes 2 CK of the row bus and PRE / REF 1 CK (JESD238:
  1.5 and 0.5 CK, which Ramulator 2.1 models in half-cycle ticks), a cycle conservative;
* REFpb -> REFpb of another bank waits tRFCb (one per-bank refresh at a time), not tRREFD;
* RFM (refresh management) commands are not issued; IDD currents are placeholders.
"""
from .base import (ACT, DRAMSIM3_CONSTRAINTS, LEVELS_HBM, PRECHARGE_SPACING, REFAB, Standard,
                   dramsim3_commands, jedec_refresh_bank_rules, per_bank_refresh,
                   refb_other_act, refresh_to_other_bank_rules)

STANDARD = Standard(
    name="HBM3", family="HBM", document="JESD238", levels=LEVELS_HBM,
    commands=dramsim3_commands(refresh_bank="REFpb", two_cycle=(ACT,)),
    constraints=jedec_refresh_bank_rules(
        refresh_to_other_bank_rules(DRAMSIM3_CONSTRAINTS) + PRECHARGE_SPACING),
    refresh=(REFAB, per_bank_refresh("REFpb")),
    presets=("HBM3-6400",), burst_divisor=4, split_rcd=True, dual_command=True, dramsim3=False,
    bl_choices=(8,), delay_rules={"refb_other_act": refb_other_act},
    checker={"tPPD": True, "tRREFD": True, "act_refb_tRRD": True}, extra_fields=("tREFSBRD",))
