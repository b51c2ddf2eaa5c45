"""The application's version: the one place it is written.

Read by the command line (``--version``), the GUI (``QApplication.applicationVersion``), the
project files (``app_version`` attributes) and the installer build (packaging/diffmem.spec
reads this file as text, so keep the assignment on one line).
"""
from __future__ import annotations

APP_VERSION = "0.1.0"
