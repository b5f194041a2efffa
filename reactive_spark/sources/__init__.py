"""Event sources: timers, file watchers, REST triggers, observables."""

from reactive_spark.sources.timer import TimerEventSource

__all__ = ["TimerEventSource"]
