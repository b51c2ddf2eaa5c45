"""The PySide6 + pyqtgraph desktop GUI; a client of engine/ (which never imports Qt)."""
