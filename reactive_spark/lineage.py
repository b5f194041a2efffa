"""The lineage of a context as text, Mermaid, Graphviz DOT or JSON (`reactive-spark graph`).

Each format renders what `DStreamGraph.describe` returns: streams with their dependencies,
bindings and outputs, and the event sources.

Examples:
    >>> from reactive_spark import Days
    >>> daily = ssc.timer(t0, None, Days(1), "daily")
    >>> job = ssc.queueStream([[1]]).map(str).foreachRDD(print).bind(daily)
    >>> print(render(ssc.graph.describe(ssc.sources), "text"))
    sources:
      daily (timer)
    streams:
      [0] queueStream[0]  (input)
      [1] map[1](str)  <- [0]
      [2] foreachRDD[2](print)  <- [1]  bound to daily  (output)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from reactive_spark.errors import InvalidArgumentError

__all__ = ["FORMATS", "render"]

Lineage = dict[str, Any]


def _text(lineage: Lineage) -> str:
    lines = ["sources:"]
    for source in lineage["sources"]:
        derived = f" <- {', '.join(source['parents'])}" if source["parents"] else ""
        lines.append(f"  {source['name']} ({source['kind']}){derived}")
    lines.append("streams:")
    for stream in lineage["streams"]:
        parts = [f"  [{stream['id']}] {stream['name']}"]
        if stream["parents"]:
            parts.append("<- " + ", ".join(_parent(parent) for parent in stream["parents"]))
        if stream["boundTo"]:
            parts.append(f"bound to {', '.join(stream['boundTo'])}")
        if stream["input"]:
            parts.append("(input)")
        if stream["output"]:
            parts.append("(output)")
        lines.append("  ".join(parts))
    return "\n".join(lines)


def _parent(parent: dict[str, Any]) -> str:
    kind = parent["dependency"]
    return f"[{parent['id']}]" if kind == "EventDependency" else f"[{parent['id']}] {kind}"


def _id(kind: str, key: object) -> str:
    return f"{kind}_{''.join(c if c.isalnum() else '_' for c in str(key))}"


def _label(text: str) -> str:
    return text.replace('"', "'")


def _mermaid(lineage: Lineage) -> str:
    lines = ["flowchart LR"]
    for source in lineage["sources"]:
        node = _id("source", source["name"])
        lines.append(f'  {node}(["{_label(source["name"])} ({source["kind"]})"])')
        lines += [f"  {_id('source', parent)} -.-> {node}" for parent in source["parents"]]
    for stream in lineage["streams"]:
        opening, closing = ('[["', '"]]') if stream["output"] else ('["', '"]')
        lines.append(f"  {_id('stream', stream['id'])}{opening}{_label(stream['name'])}{closing}")
    for stream in lineage["streams"]:
        node = _id("stream", stream["id"])
        for parent in stream["parents"]:
            kind = parent["dependency"]
            label = "" if kind == "EventDependency" else f"|{_label(kind)}|"
            lines.append(f"  {_id('stream', parent['id'])} -->{label} {node}")
        lines += [f"  {_id('source', source)} -.-> {node}" for source in stream["boundTo"]]
    return "\n".join(lines)


def _dot(lineage: Lineage) -> str:
    lines = ["digraph lineage {", "  rankdir=LR;", "  node [fontname=Helvetica];"]
    for source in lineage["sources"]:
        node = _id("source", source["name"])
        label = f"{_label(source['name'])}\\n({source['kind']})"
        lines.append(f'  {node} [shape=ellipse, label="{label}"];')
        lines += [
            f"  {_id('source', parent)} -> {node} [style=dashed];" for parent in source["parents"]
        ]
    for stream in lineage["streams"]:
        node = _id("stream", stream["id"])
        shape = "box3d" if stream["output"] else "box"
        lines.append(f'  {node} [shape={shape}, label="{_label(stream["name"])}"];')
        for parent in stream["parents"]:
            kind = parent["dependency"]
            attributes = "" if kind == "EventDependency" else f' [label="{_label(kind)}"]'
            lines.append(f"  {_id('stream', parent['id'])} -> {node}{attributes};")
        lines += [
            f"  {_id('source', source)} -> {node} [style=dashed];" for source in stream["boundTo"]
        ]
    lines.append("}")
    return "\n".join(lines)


def _json(lineage: Lineage) -> str:
    return json.dumps(lineage, indent=2)


#: The formats `render` knows.
FORMATS: dict[str, Callable[[Lineage], str]] = {
    "text": _text,
    "mermaid": _mermaid,
    "dot": _dot,
    "json": _json,
}


def render(lineage: Lineage, format: str) -> str:
    """`lineage` (from `DStreamGraph.describe`) in `format`: text, mermaid, dot or json."""
    if format not in FORMATS:
        raise InvalidArgumentError(f"format must be one of {sorted(FORMATS)}, got {format!r}")
    return FORMATS[format](lineage)
