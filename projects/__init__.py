"""HDF5 project files (open, atomic save, schema and migrations): filled by the projects issue."""
