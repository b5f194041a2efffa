"""The DStream lineage: its node, operations, inputs and state (see docs/architecture.md)."""

# updateStateByKey's stream registers itself with the pair operations when imported
from reactive_spark.dstream import state as state
