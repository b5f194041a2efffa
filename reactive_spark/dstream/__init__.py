"""DStream lineage: the base node, transformations, windows, outputs, pair functions, inputs."""
