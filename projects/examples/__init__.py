"""Example projects shipped with DiffMem Studio, and the script that builds them."""
