"""The GUI's views (one per main-window page)."""
