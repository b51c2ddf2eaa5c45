"""Reusable pyqtgraph plot items of the GUI (no engine or optimiser imports)."""
