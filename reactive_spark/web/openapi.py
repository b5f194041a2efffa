"""The OpenAPI description of the console's API (served at `/api/openapi.json`).

Examples:
    >>> sorted(openapi("")["paths"])[:3]
    ['/api/batches', '/api/batches/{instanceId}', '/api/deadlines']
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

__all__ = ["openapi"]

Schema = dict[str, Any]

_NULLABLE_INT: Schema = {"type": "integer", "nullable": True}
_NULLABLE_TEXT: Schema = {"type": "string", "nullable": True}
_NULLABLE_NUMBER: Schema = {"type": "number", "nullable": True}

SCHEMAS: dict[str, Schema] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {"error": {"type": "string"}},
    },
    "UserError": {
        "type": "object",
        "nullable": True,
        "properties": {
            "type": {"type": "string"},
            "message": {"type": "string"},
            "location": _NULLABLE_TEXT,
            "traceback": {"type": "string"},
        },
    },
    "Source": {
        "type": "object",
        "required": ["name", "kind", "events", "catchUp"],
        "properties": {
            "name": {"type": "string"},
            "kind": {"type": "string"},
            "events": {"type": "integer", "minimum": 0},
            "lastFired": _NULLABLE_INT,
            "lastFiredUtc": _NULLABLE_TEXT,
            "nextFire": _NULLABLE_INT,
            "nextFireUtc": _NULLABLE_TEXT,
            "catchUp": {"type": "string", "enum": ["all", "coalesce", "latest", "skip"]},
            "queueDepth": {
                "type": "integer",
                "minimum": 0,
                "description": "Events waiting: posted and not accepted, or not processed yet.",
            },
            "maxQueued": {"type": "integer", "minimum": 1},
            "overflowPolicy": {
                "type": "string",
                "enum": ["block", "reject", "coalesce", "drop-oldest", "drop-newest"],
            },
            "dropped": {
                "type": "integer",
                "minimum": 0,
                "description": "Events dropped past the bound or by a stop.",
            },
            "coalesced": {
                "type": "integer",
                "minimum": 0,
                "description": "Events merged into a later one past the bound.",
            },
            "parents": {"type": "array", "items": {"type": "string"}},
            "boundStreams": {"type": "array", "items": {"type": "integer"}},
            "fireable": {"type": "boolean"},
        },
    },
    "Event": {
        "type": "object",
        "required": ["instanceId", "source", "index", "time"],
        "properties": {
            "instanceId": {"type": "integer"},
            "source": {"type": "string"},
            "index": {"type": "integer"},
            "time": {"type": "integer"},
            "timeUtc": {"type": "string"},
            "kind": {"type": "string"},
            "fields": {"type": "object"},
            "protected": {
                "type": "boolean",
                "description": "An event of a token-protected REST trigger or of a source "
                "derived from one: what it carries (a request's query and body, values) is shown "
                "to authenticated viewers only.",
            },
            "firedBy": {
                "type": "string",
                "nullable": True,
                "description": '"console" for an event fired from the console.',
            },
        },
    },
    "Job": {
        "type": "object",
        "required": ["stream", "status"],
        "properties": {
            "stream": {"type": "string"},
            "streamId": {"type": "integer"},
            "kind": {"type": "string", "enum": ["output", "materialize", "plan"]},
            "function": _NULLABLE_TEXT,
            "status": {
                "type": "string",
                "enum": ["queued", "running", "succeeded", "failed", "cancelled"],
            },
            "started": _NULLABLE_NUMBER,
            "ended": _NULLABLE_NUMBER,
            "duration": _NULLABLE_NUMBER,
            "error": {"$ref": "#/components/schemas/UserError"},
            "sparkJobGroup": {
                "type": "string",
                "nullable": True,
                "description": "The Spark job group the job's Spark jobs ran in.",
            },
            "sparkJobs": {
                "type": "array",
                "description": "In a single batch's answer, when Spark's UI is on: the job's "
                "Spark jobs, each with the address of its page there.",
                "items": {
                    "type": "object",
                    "properties": {"id": {"type": "integer"}, "url": {"type": "string"}},
                },
            },
        },
    },
    "Deadline": {
        "type": "object",
        "required": ["kind", "name", "deadlineUtc"],
        "properties": {
            "kind": {"type": "string", "enum": ["source", "output"]},
            "name": {"type": "string", "description": "The source's or the stream's name."},
            "periodStartUtc": {"type": "string"},
            "deadlineUtc": {"type": "string"},
            "duringDowntime": {
                "type": "boolean",
                "description": "It passed while the process was down; reported at the restart.",
            },
            "periodsMissed": {
                "type": "integer",
                "minimum": 1,
                "description": "How many periods this report stands for (after a long downtime).",
            },
            "description": {"type": "string"},
        },
    },
    "Batch": {
        "type": "object",
        "required": ["instanceId", "source", "time", "status", "jobs"],
        "properties": {
            "instanceId": {"type": "integer"},
            "source": {"type": "string"},
            "index": {"type": "integer"},
            "time": {"type": "integer"},
            "timeUtc": {"type": "string"},
            "status": {
                "type": "string",
                "enum": [
                    "queued",
                    "no jobs",
                    "planned",
                    "running",
                    "succeeded",
                    "failed",
                    "dropped",
                ],
                "description": '"dropped": the event was accepted, then a stop that did not '
                "wait for it dropped it; it never ran.",
            },
            "submitted": _NULLABLE_NUMBER,
            "started": _NULLABLE_NUMBER,
            "completed": _NULLABLE_NUMBER,
            "duration": _NULLABLE_NUMBER,
            "records": {"type": "integer"},
            "event": {"$ref": "#/components/schemas/Event"},
            "jobs": {"type": "array", "items": {"$ref": "#/components/schemas/Job"}},
            "inputs": {"type": "object"},
            "derived": {
                "type": "array",
                "description": "The events derived from this one, directly or not (a REST "
                "trigger's filter, say), with their batches' status: the batches it made run.",
                "items": {
                    "type": "object",
                    "required": ["instanceId", "source", "status"],
                    "properties": {
                        "instanceId": {"type": "integer"},
                        "source": {"type": "string"},
                        "status": {"type": "string"},
                    },
                },
            },
        },
    },
    "Graph": {
        "type": "object",
        "required": ["streams", "sources"],
        "properties": {
            "streams": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer"},
                        "name": {"type": "string"},
                        "function": _NULLABLE_TEXT,
                        "output": {"type": "boolean"},
                        "input": {"type": "boolean"},
                        "boundTo": {"type": "array", "items": {"type": "string"}},
                        "parents": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "id": {"type": "integer"},
                                    "dependency": {"type": "string"},
                                },
                            },
                        },
                    },
                },
            },
            "sources": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "kind": {"type": "string"},
                        "parents": {"type": "array", "items": {"type": "string"}},
                    },
                },
            },
        },
    },
    "Fired": {
        "type": "object",
        "required": ["source", "index", "time", "instanceId", "status"],
        "properties": {
            "source": {"type": "string"},
            "index": {"type": "integer"},
            "time": {"type": "integer"},
            "instanceId": {"type": "integer"},
            "status": {"type": "string"},
        },
    },
}


def _json(schema: Schema) -> Schema:
    return {"content": {"application/json": {"schema": schema}}}


def _ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _error(description: str) -> Schema:
    return {"description": description, **_json(_ref("Error"))}


#: Answers any request may get before its handler runs (docs/security.md).
_REFUSED: Schema = {
    "401": _error("Not signed in (the console has auth): send Authorization: Bearer <token>."),
    "403": _error(
        "A cross-site request (Origin, Sec-Fetch-Site); signed in without the scope this "
        "needs; or a client on another machine, to a console without auth."
    ),
    "421": _error("The Host header is not one the console answers to (allowed_hosts)."),
}
_WRITE_REFUSED: Schema = {
    "403": _error(
        "A cross-site request (Origin, Sec-Fetch-Site); too little scope; a client on another "
        "machine, to a console without auth; or a token-protected trigger without control "
        "scope or its own token."
    ),
    "408": _error("The body did not arrive in time."),
    "413": _error("The body is too large."),
    "415": _error("Not Content-Type: application/json, or an unknown Content-Encoding."),
}


_LIMIT: Schema = {
    "name": "limit",
    "in": "query",
    "required": False,
    "description": "How many, newest first (default 100).",
    "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
}


def _viewed(responses: Schema) -> Schema:
    """`responses` of a request that needs the view scope, with its refusals."""
    return {**responses, **_REFUSED}


def openapi(prefix: str) -> Schema:
    """The OpenAPI 3.0 description of the API, for a console mounted at `prefix`."""
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "reactive-spark console",
            "version": metadata.version("reactive-spark"),
            "description": "Sources, batches, jobs and lineage of a running StreamingContext.",
        },
        "servers": [{"url": prefix or "/"}],
        "paths": {
            "/api/sources": {
                "get": {
                    "summary": "Every event source: events fired, next fire time, catch-up policy.",
                    "responses": _viewed(
                        {
                            "200": {
                                "description": "The sources.",
                                **_json({"type": "array", "items": _ref("Source")}),
                            }
                        }
                    ),
                }
            },
            "/api/sources/{name}/fire": {
                "post": {
                    "summary": "Fire a REST or manual trigger.",
                    "parameters": [
                        {
                            "name": "name",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "requestBody": {
                        "required": False,
                        "description": "A manual source's value; a REST source's "
                        '{"path": ..., "body": ...}.',
                        **_json({}),
                    },
                    "responses": {
                        "202": {
                            "description": "Accepted: it will run, unless a stop that does not "
                            "wait drops it (its batch then says dropped).",
                            **_json(_ref("Fired")),
                        },
                        "400": _error(
                            "The body is not strict JSON (NaN, Infinity, nested deeper than "
                            "256, undecodable) or not what the source takes."
                        ),
                        **_REFUSED,
                        **_WRITE_REFUSED,
                        "404": _error("No such source."),
                        "409": _error(
                            "The source is not a REST or manual trigger; or its overflow policy "
                            "is coalesce and the event was merged into a later one, as part of "
                            "which it runs (do not fire it again)."
                        ),
                        "503": _error(
                            "The context is not running, or the source's queue is full and its "
                            "overflow policy is reject (retry after `Retry-After` seconds), or "
                            "the event was dropped before it was accepted, or the context stopped "
                            "first: it does not run."
                        ),
                    },
                }
            },
            "/api/graph": {
                "get": {
                    "summary": "The lineage: streams, dependencies, bindings, outputs, sources.",
                    "responses": _viewed(
                        {"200": {"description": "The lineage.", **_json(_ref("Graph"))}}
                    ),
                }
            },
            "/api/events": {
                "get": {
                    "summary": "The latest accepted events.",
                    "parameters": [_LIMIT],
                    "responses": _viewed(
                        {
                            "200": {
                                "description": "Events, newest first.",
                                **_json({"type": "array", "items": _ref("Event")}),
                            },
                            "400": _error("A bad limit."),
                        }
                    ),
                }
            },
            "/api/events/stream": {
                "get": {
                    "summary": "Server-sent events: every event, batch and job transition.",
                    "responses": _viewed(
                        {
                            "200": {
                                "description": "An endless text/event-stream; event types: event, "
                                "batch, job, dropped, deadline, source-error, receiver.",
                                "content": {"text/event-stream": {"schema": {"type": "string"}}},
                            }
                        }
                    ),
                }
            },
            "/api/batches": {
                "get": {
                    "summary": "The latest batches (with their jobs).",
                    "parameters": [_LIMIT],
                    "responses": _viewed(
                        {
                            "200": {
                                "description": "Batches, newest first.",
                                **_json({"type": "array", "items": _ref("Batch")}),
                            },
                            "400": _error("A bad limit."),
                        }
                    ),
                }
            },
            "/api/batches/{instanceId}": {
                "get": {
                    "summary": "An event's batch: its jobs, their status, duration and error.",
                    "parameters": [
                        {
                            "name": "instanceId",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer", "minimum": 0, "maximum": 10**18 - 1},
                        }
                    ],
                    "responses": _viewed(
                        {
                            "200": {"description": "The batch.", **_json(_ref("Batch"))},
                            "400": _error("Not an instanceId."),
                            "404": _error("No such event in the history."),
                        }
                    ),
                }
            },
            "/api/deadlines": {
                "get": {
                    "summary": "The latest missed deadlines of sources and streams (expect).",
                    "parameters": [_LIMIT],
                    "responses": _viewed(
                        {
                            "200": {
                                "description": "Missed deadlines, newest first.",
                                **_json({"type": "array", "items": _ref("Deadline")}),
                            },
                            "400": _error("A bad limit."),
                        }
                    ),
                }
            },
            "/metrics": {
                "get": {
                    "summary": "Prometheus metrics.",
                    "responses": _viewed(
                        {
                            "200": {
                                "description": "Prometheus' text format.",
                                "content": {"text/plain": {"schema": {"type": "string"}}},
                            }
                        }
                    ),
                }
            },
        },
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The console's token (or what its authenticator takes); "
                    "without authentication configured, loopback clients need none.",
                }
            },
        },
        "security": [{"bearer": []}, {}],
    }
