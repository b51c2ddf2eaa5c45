"""Dataflow / schedule optimiser (FADiff and baselines, PyTorch): filled by the optimiser issue."""
