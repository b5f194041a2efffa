"""`python -m reactive_spark.cli`: the `reactive-spark` command, as `python -m reactive_spark`."""

from reactive_spark.cli import main

raise SystemExit(main())
