"""Study parameters written as text, the one parser the command line (``main.py study
--param/--variant/--compute``) and the application's Studies tab both use.

    NAME=V1,V2,...                 a parameter and its values     (parse_param_items)
    NAME:KEY=VALUE,KEY=VALUE       a variant and its overrides    (parse_variant_items)
    KEY=VALUE                      a key and one value            (parse_key_values)

Values go through :func:`engine.studies.spec.parse_value` (typed as the config field of that
name), except the parameters of :data:`engine.studies.recommendations.TEXT_PARAMS`, which stay
text.  Errors are :class:`engine.studies.spec.StudyError` naming the item and what was expected;
``what`` is how the caller's user wrote it (``"--variant"`` on the command line, ``"variant"``
in the application).

No Qt here.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from engine.studies.spec import StudyError, parse_value


def split_items(text: str, sep: str) -> list[str]:
    """The non-empty, stripped pieces of ``text`` between ``sep``."""
    return [s.strip() for s in text.split(sep) if s.strip()]


def parse_param_values(name: str, values: Iterable[str]) -> list[Any]:
    """The values of parameter ``name`` (text kept for the text parameters)."""
    from engine.studies.recommendations import TEXT_PARAMS   # given as text, not config fields
    texts = [v.strip() for v in values if v.strip()]
    return texts if name in TEXT_PARAMS else [parse_value(name, v) for v in texts]


def parse_param_items(items: Sequence[str], what: str = "--param") -> dict[str, list[Any]]:
    """``NAME=V1,V2,...`` items into ``{NAME: [values]}``."""
    params: dict[str, list[Any]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or not name.strip() or not values.strip():
            raise StudyError(f"{what} {item!r}: expected NAME=V1,V2,...")
        params[name.strip()] = parse_param_values(name.strip(), values.split(","))
    return params


def parse_variant_items(items: Sequence[str],
                        what: str = "--variant") -> dict[str, dict[str, Any]]:
    """``NAME:KEY=VALUE,KEY=VALUE`` items into ``{NAME: {KEY: value}}``."""
    table: dict[str, dict[str, Any]] = {}
    for item in items:
        vname, sep, rest = item.partition(":")
        if not sep or not vname.strip():
            raise StudyError(f"{what} {item!r}: expected NAME:KEY=VALUE,KEY=VALUE")
        overrides: dict[str, Any] = {}
        for kv in split_items(rest, ","):
            key, sep, value = kv.partition("=")
            if not sep or not key.strip():
                raise StudyError(f"{what} {item!r}: {kv!r} is not KEY=VALUE")
            overrides[key.strip()] = parse_value(key.strip(), value.strip())
        if not overrides:
            raise StudyError(f"{what} {item!r}: expected NAME:KEY=VALUE,KEY=VALUE "
                             f"(no KEY=VALUE given)")
        if vname.strip() in table:
            raise StudyError(f"{what} {item!r}: a variant named {vname.strip()!r} was given "
                             "before: every variant needs its own name")
        table[vname.strip()] = overrides
    return table


def parse_key_values(items: Sequence[str], what: str, typed: bool) -> dict[str, Any]:
    """``KEY=VALUE`` items into a dict: values typed as config fields (``typed``) or numbers
    where they read as one, else text."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise StudyError(f"{what} {item!r}: expected KEY=VALUE")
        key = key.strip()
        if typed:
            out[key] = parse_value(key, value.strip())
        else:
            try:
                out[key] = float(value)
            except ValueError:
                out[key] = value.strip()
    return out


def study_params(items: Sequence[str], variants: Sequence[str]) -> dict[str, Any]:
    """``--param`` and ``--variant`` items into :attr:`StudySetup.params`."""
    params: dict[str, Any] = dict(parse_param_items(items))
    if variants:
        params["variants"] = parse_variant_items(variants)
    return params
