"""`python -m reactive_spark` is the `reactive-spark` command (see `reactive_spark.cli`)."""

from reactive_spark.cli import main

raise SystemExit(main())
