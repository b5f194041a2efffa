"""The mechanical port of a pyspark.streaming program: imports and awaits, nothing else.

1. `from pyspark.streaming import X` becomes `from reactive_spark import X`.
2. The `if __name__ == "__main__":` block becomes `async def main() -> None:` (same body),
   run by `asyncio.run(main())`.
3. The lifecycle is awaited: `ssc.start()`, `ssc.awaitTermination(...)`,
   `ssc.awaitTerminationOrTimeout(...)`, `ssc.stop(...)`; and a blocking `time.sleep(...)` on
   the loop becomes `await asyncio.sleep(...)`.

docs/porting.md shows what this does to each of Spark's streaming examples.
"""

from __future__ import annotations

import difflib
import re

__all__ = ["changed_lines", "port"]

_IMPORT = re.compile(r"^from pyspark\.streaming import (.+)$")
_MAIN = re.compile(r"^if __name__ == [\"']__main__[\"']:\s*$")
_LIFECYCLE = re.compile(
    r"(?<![\w.])(ssc)\.(start|stop|awaitTermination|awaitTerminationOrTimeout)\("
)
_SLEEP = re.compile(r"(?<![\w.])time\.sleep\(")


def port(source: str) -> str:
    """`source` (a pyspark.streaming program) ported to reactive-spark, as the module says."""
    lines = source.splitlines()
    ported: list[str] = []
    in_main = False
    asyncio_imported = False
    for line in lines:
        imported = _IMPORT.match(line)
        if imported:
            line = f"from reactive_spark import {imported[1]}"
        if not asyncio_imported and line.startswith(("import ", "from ")):
            ported.append("import asyncio")
            asyncio_imported = True
        if _MAIN.match(line):
            line = "async def main() -> None:"
            in_main = True
        elif in_main:
            line = _LIFECYCLE.sub(r"await \1.\2(", line)
            line = _SLEEP.sub("await asyncio.sleep(", line)
        ported.append(line)
    if in_main:
        ported += ["", "", 'if __name__ == "__main__":', "    asyncio.run(main())"]
    return "\n".join(ported) + "\n"


def changed_lines(before: str, after: str) -> int:
    """Non-blank lines a port added or changed."""
    old, new = before.splitlines(), after.splitlines()
    matcher = difflib.SequenceMatcher(a=old, b=new)
    return sum(
        1
        for tag, _, _, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
        for line in new[j1:j2]
        if line.strip()
    )


def example_diff(name: str, source: str) -> str:
    """The markdown section of docs/porting.md showing what the port does to an example."""
    diff = difflib.unified_diff(
        source.splitlines(keepends=True),
        port(source).splitlines(keepends=True),
        f"pyspark/{name}",
        f"reactive_spark/{name}",
        n=0,
    )
    return f"### {name}\n\n```diff\n{''.join(diff)}```\n"
