"""'Did you mean ...?' for a name that is not known: one rule for every lookup by name (memory
presets, configuration keys, studies, Gemmini hardware, networks)."""
from __future__ import annotations

import difflib
from typing import Iterable


def close_names(name: str, names: Iterable[str], n: int = 1) -> list[str]:
    """The known names closest to `name`: one equal to it but for case first, then the
    names it begins (shortest first: "DDR4" -> "DDR4-3200", where the closest spelling was
    "GDDR6"), then the closest spellings (difflib, case ignored), at most `n`."""
    names = list(names)
    low = name.lower()
    same = [x for x in names if x.lower() == low]
    if same:
        return same[:n]
    out = sorted((x for x in names if low and x.lower().startswith(low)), key=len)[:n]
    by_lower = {x.lower(): x for x in names}
    for x in difflib.get_close_matches(low, list(by_lower), n=n):
        if len(out) < n and by_lower[x] not in out:
            out.append(by_lower[x])
    return out


def did_you_mean(name: str, names: Iterable[str], n: int = 1) -> str:
    """' (did you mean 'X'?)' (or 'X' or 'Y' with n > 1) for the closest names, or ''."""
    close = close_names(name, names, n)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
