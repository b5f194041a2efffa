"""The C library, loaded on first use, for the few system calls Python does not wrap.

Loading it at import time would cost every `import reactive_spark` (and finding it by name,
`ctypes.util.find_library`, starts `ldconfig` or a compiler): it is loaded once, when a
caller first needs it, from the symbols the process already has.
"""

from __future__ import annotations

import ctypes
import functools

__all__ = ["libc"]


@functools.cache
def libc() -> ctypes.CDLL | None:
    """This process's C library, or None where it cannot be loaded this way (Windows).

    Examples:
        >>> import sys
        >>> sys.platform == "win32" or libc() is libc() is not None
        True
    """
    try:
        return ctypes.CDLL(None, use_errno=True)
    except (OSError, TypeError, AttributeError):
        return None
