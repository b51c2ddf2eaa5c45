"""Ramulator 2 compatibility: its YAML run files (:mod:`.config`), its presets
(:mod:`.presets`) and its LoadStoreTrace files (:mod:`.trace`)."""
from .config import SUFFIXES, RamulatorConfig, load_yaml
from .trace import read_loadstore

__all__ = ["SUFFIXES", "RamulatorConfig", "load_yaml", "read_loadstore"]
