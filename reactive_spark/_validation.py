"""Argument checks shared by the public API; errors name the argument and the value."""

from __future__ import annotations

from reactive_spark.errors import InvalidArgumentError

__all__ = ["require_int"]


def require_int(value: object, name: str, *, minimum: int = 1) -> int:
    """Return `value` if it is an int (not a bool) of at least `minimum`, else raise.

    Example:
        >>> require_int(3, "numPartitions")
        3
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        wanted = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise InvalidArgumentError(f"{name} must be {wanted}, got {value!r}")
    return value
