"""What the API reference shows: what users call, by the naming rules of docs/architecture.md.

A griffe extension, loaded by mkdocs.yml, that takes out of the documented package:

- a module's names that its `__all__` does not list;
- a class's underscored names (but `__init__`, whose parameters are the class's signature);
- on the context, streams, sources and listeners (and the mixins they are made of), snake_case
  names and a few one-word ones set below: their API is camelCase, as PySpark's, so these are
  what the engine calls; PySpark's own snake_case names stay.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import griffe

PACKAGE = "reactive_spark"
CAMEL_CASE_API = {
    "reactive_spark.context.StreamingContext",
    "reactive_spark.dstream.base.DStream",
    "reactive_spark.events.source.EventSource",
    "reactive_spark.listener.StreamingListener",
}
PYSPARK_SNAKE_CASE = {"is_cached", "is_checkpointed"}  # attributes of every PySpark DStream
ENGINE_WORDS = {"computer", "registrar"}  # one word, so snake_case alone does not tell
SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)+")


def _lineage(cls: griffe.Class) -> list[griffe.Class]:
    return [cls, *cls.mro()]  # a base that does not resolve raises: the rule needs them all


def _classes(obj: griffe.Object) -> Iterator[griffe.Class]:
    for member in obj.members.values():
        if member.is_alias:
            continue
        if isinstance(member, griffe.Class):
            yield member
        if isinstance(member, griffe.Module | griffe.Class):
            yield from _classes(member)


def _camel_case_api(classes: list[griffe.Class]) -> set[str]:
    """The paths of the classes whose API is camelCase, and of every class they inherit from.

    A mixin's names are those of the classes made of it.
    """
    paths: set[str] = set()
    for cls in classes:
        lineage = _lineage(cls)
        if any(klass.path in CAMEL_CASE_API for klass in lineage):
            paths.update(klass.path for klass in lineage)
    return paths


def _engine_name(name: str, camel_case_api: bool) -> bool:
    if name.startswith("_"):
        return name != "__init__"  # the class's signature
    if camel_case_api and (name in ENGINE_WORDS or SNAKE_CASE.fullmatch(name)):
        return name not in PYSPARK_SNAKE_CASE
    return False


def _modules(obj: griffe.Module) -> Iterator[griffe.Module]:
    yield obj
    for member in obj.members.values():
        if isinstance(member, griffe.Module):
            yield from _modules(member)


class PublicApi(griffe.Extension):
    """Takes what users do not call out of the loaded package, so that no page shows it.

    Taken out, not marked private: members reached through a re-export are made anew on each
    access, and would not keep a mark.
    """

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Once the whole package is loaded."""
        if pkg.path != PACKAGE:
            return
        classes = list(_classes(pkg))
        camel_case_api = _camel_case_api(classes)
        for cls in classes:
            for name in [n for n in cls.members if _engine_name(n, cls.path in camel_case_api)]:
                cls.del_member(name)
        for module in _modules(pkg):
            exports = module.exports
            if exports is None:
                continue
            for name, member in list(module.members.items()):
                if not member.is_alias and not member.is_module and name not in exports:
                    module.del_member(name)
