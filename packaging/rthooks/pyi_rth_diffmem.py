# PyInstaller runtime hook of DiffMem Studio: runs in the bundle before main.py.
#
# numba's own cache locators fail inside a bundle (no source files; relative file names make
# the cache folder depend on the current directory).  Point numba at
# engine.numba_cache.FrozenCacheLocator (a per-user cache folder) before numba is imported;
# the string equals engine.numba_cache.LOCATOR_SPEC (checked by tests/test_packaging.py).
# Nothing is imported here: the GUI must start without numba.
import os

os.environ.setdefault("NUMBA_CACHE_LOCATOR_CLASSES",
                      "engine.numba_cache.FrozenCacheLocator,InTreeCacheLocator,"
                      "UserWideCacheLocator")
