"""`/api/latest`, `/api/history` and `/api/tco`: the commands' `--format json` documents, their
options taken as query parameters (`?gpu=H100&kind=spot`); `/api/openapi.json` describes them.

The parameters are parsed by the parameter definitions the commands build their options from
(`tracker.questions.params`), so a bad one is refused with the words the command line uses
(HTTP 400); the documents come from `tracker.questions.documents`, the same functions the
commands print with. The same parameters give each option's JSON Schema (`schema_of`), for the
MCP tools' arguments and the OpenAPI document's query parameters alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from storage import latest as latest_mod
from storage.reads import dashboard
from tracker.questions import documents, params
from tracker.questions import history as history_q
from tracker.questions import index as index_q
from tracker.questions import latest as latest_q
from tracker.questions import tco as tco_q
from tracker.questions import workloads as workloads_q

if TYPE_CHECKING:
    from storage.reads.tco import Need
    from tracker.config.workloads import Workload, Workloads

# The options that write files, choose the output or the store are the server's, not a caller's.
SERVERS = {"fmt", "chart", "config_path", "db", "verbose", "help"}
_TRUE, _FALSE = {"", "1", "true", "yes", "on"}, {"0", "false", "no", "off"}
# A bound on one answer: a caller wanting more narrows the question.
MAX_ROWS = 10_000

Query = Mapping[str, Sequence[str]]

# The questions' parameters, the very ones the commands' options are built from.
LATEST = click.Command("latest", params=params.latest())
HISTORY = click.Command("history", params=params.history())
TCO = click.Command("tco", params=params.tco())
INDEX = click.Command("index", params=index_q.parameters())


class BadRequest(Exception):
    """A parameter the command would refuse (HTTP 400); the message is the command's."""


def options(command: click.Command, query: Query) -> dict[str, Any]:
    """The command's option values from the query parameters, validated by click."""
    accepted = {
        flag.lstrip("-").replace("-", "_"): p
        for p in command.params
        if isinstance(p, click.Option) and p.name not in SERVERS and p.expose_value
        for flag in p.opts
        if flag.startswith("--")
    }
    args: list[str] = []
    for name, values in query.items():
        option = accepted.get(name.replace("-", "_"))
        if option is None:
            names = ", ".join(sorted(accepted))
            raise BadRequest(f"unknown parameter {name!r} (accepted: {names})")
        args += _arguments(option, name, values)
    try:
        ctx = command.make_context(command.name or "", args)
    except click.ClickException as exc:
        raise BadRequest(exc.format_message()) from exc
    return dict(ctx.params)


def latest(
    store: Path, query: Query, *, timeout_s: float | None, workloads: Workloads | None = None
) -> list[dict[str, Any]]:
    """What `gpu-tracker latest --format json` prints (`workloads`: the config's, else the
    bundled ones)."""
    given = options(LATEST, query)
    work = _work(workloads, given["workload"], given["sort"])
    filters = latest_q.filters_from(given)
    found = latest_mod.cheapest(
        store,
        filters,
        sort=given["sort"],
        limit=given["limit"],
        per_gpu=given["per_gpu"],
        usd=given["usd"],
        timeout_s=timeout_s,
        per_gpu_hour=work.by_gpu() if work else (),
    )
    if not found.result.rows:
        _refuse(latest_q.unknown(store, filters, timeout_s))
    return bounded(documents.latest(found))


def history(store: Path, query: Query, *, timeout_s: float | None) -> list[dict[str, Any]]:
    """What `gpu-tracker history --format json` prints."""
    given = options(HISTORY, query)
    try:
        window = history_q.window_of(given["since"], given["until"], datetime.now(UTC))
    except click.UsageError as exc:
        raise BadRequest(exc.message) from exc
    filters = history_q.filters_from(given)
    price = history_q.price_from(given)
    found = dashboard.statistics(
        store, filters, window, below=given["below"], price=price, timeout_s=timeout_s
    )
    if not found:  # a GPU nobody knows is refused, as the command refuses it
        try:
            params.check_filters(store, gpu=given["gpu"], timeout_s=timeout_s)
        except click.UsageError as exc:
            raise BadRequest(exc.format_message()) from exc
    return bounded(documents.history(found[: given["limit"]]))


def tco(
    store: Path, query: Query, *, timeout_s: float | None, workloads: Workloads | None = None
) -> list[dict[str, Any]]:
    """What `gpu-tracker tco --format json` prints."""
    given = options(TCO, query)
    need, work = work_need(tco_q.need_from(given), given, workloads)
    baseline = given["baseline"]
    if (problem := tco_q.baseline_problem(baseline, need)) is not None:
        raise BadRequest(problem)
    answer = dashboard.tco(store, need, baseline=baseline, timeout_s=timeout_s)
    if not answer.rows:
        _refuse(tco_q.unknown_gpu(store, need, timeout_s))
    answer = workloads_q.with_units(answer, work) if work else answer
    return bounded(documents.tco(answer, given["limit"]))


def work_need(
    need: Need, given: dict[str, Any], workloads: Workloads | None
) -> tuple[Need, Workload | None]:
    """The need with `amount`'s horizon, and the workload `given` names (BadRequest: an unknown
    one, or an amount that cannot be priced, in the command's words)."""
    work = _work(workloads, given["workload"])
    try:
        return workloads_q.for_amount(need, work, given["amount"])[0], work
    except ValueError as exc:
        raise BadRequest(str(exc)) from exc


def _work(
    workloads: Workloads | None, name: str | None, sort: str | None = None
) -> Workload | None:
    from tracker.config import lazy

    try:
        return workloads_q.chosen(lazy.workloads() if workloads is None else workloads, name, sort)
    except ValueError as exc:
        raise BadRequest(str(exc)) from exc


def _arguments(option: click.Option, name: str, values: Sequence[str]) -> list[str]:
    flag = max(option.opts, key=len)
    if not option.is_flag:
        return [part for value in values for part in (flag, value)]
    args = []
    for value in values:
        if value.lower() not in _TRUE | _FALSE:
            raise BadRequest(f"{name}={value!r}: a switch is true or false")
        args += [flag] if value.lower() in _TRUE else []
    return args


def _refuse(problems: list[str]) -> None:
    if problems:
        raise BadRequest("; ".join(problems))


def bounded(document: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if len(document) > MAX_ROWS:
        raise BadRequest(
            f"the answer has {len(document)} rows, more than {MAX_ROWS}: narrow the question "
            "(limit, gpu, provider ...)"
        )
    return document


def schema_of(command: click.Command, *, arrays: bool = False) -> dict[str, Any]:
    """The JSON Schema of a command's options as arguments (`--per-gpu` is `per_gpu`);
    `arrays`: a repeatable option is an array of its values."""
    properties: dict[str, Any] = {}
    for param in command.params:
        if not isinstance(param, click.Option) or param.name in SERVERS or not param.name:
            continue
        long = max(param.opts, key=len).lstrip("-").replace("-", "_")
        found = _type_schema(param, command)
        found["description"] = (param.help or "").strip()
        # Only a plain default (click keeps a sentinel object for "none given").
        if isinstance(param.default, str | int | float) and not param.is_flag:
            found["default"] = param.default
        if arrays and param.multiple:
            found = {"type": "array", "items": found, "description": found.pop("description")}
        properties[long] = found
    return {"type": "object", "properties": properties, "additionalProperties": False}


def _type_schema(param: click.Option, command: click.Command) -> dict[str, Any]:
    from collectors import REGISTRY
    from collectors.common import PRICE_KINDS
    from storage.reads.index.read import KINDS, SEGMENTS
    from tracker.questions.types import Count, Number, PriceKindName, ProviderName

    kind = param.type
    if param.is_flag:
        return {"type": "boolean"}
    if command is INDEX and param.name in ("kind", "segment"):  # index's own kinds, segments
        return {"enum": list(KINDS if param.name == "kind" else SEGMENTS)}
    if isinstance(kind, click.Choice):
        return {"enum": [str(c) for c in kind.choices]}
    if isinstance(kind, Count | Number):
        low, high, low_open = kind.bounds
        least = "exclusiveMinimum" if low_open else "minimum"
        name = "integer" if isinstance(kind, Count) else "number"
        return {"type": name, least: low, "maximum": high}
    if isinstance(kind, ProviderName):
        return {"enum": sorted(REGISTRY)}
    if isinstance(kind, PriceKindName):
        return {"enum": list(PRICE_KINDS)}
    return {"type": "string"}


_PATHS = {"latest": LATEST, "history": HISTORY, "tco": TCO, "index": INDEX}


def openapi(version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the JSON API: each endpoint's query parameters are its
    command's options (a repeatable one is a parameter given again), its answer the command's
    `--format json` rows, its refusals HTTP 400 and 503 with an `error`."""
    refusal = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    paths = {}
    for name, command in _PATHS.items():
        parameters = []
        for key, schema in schema_of(command, arrays=True)["properties"].items():
            about = schema.pop("description")
            parameter = {"name": key, "in": "query", "description": about, "schema": schema}
            parameters.append(parameter | ({"explode": True} if "items" in schema else {}))
        rows = {"type": "array", "items": {"type": "object"}}
        answers = {
            "200": {"description": f"the rows of `{name}`", "content": {"application/json":
                                                                        {"schema": rows}}},
            "400": {"description": "a parameter the command refuses, in its words",
                    "content": refusal},
            "503": {"description": "past the query time limit, or the store cannot be read",
                    "content": refusal},
        }  # fmt: skip
        summary = f"what `gpu-tracker {name} --format json` prints"
        paths[f"/api/{name}"] = {
            "get": {"operationId": name, "summary": summary, "parameters": parameters,
                    "responses": answers}
        }  # fmt: skip
    error = {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}
    return {
        "openapi": "3.1.0",
        "info": {"title": "gpu-tracker dashboard API", "version": version},
        "paths": paths,
        "components": {"schemas": {"Error": error}},
    }
