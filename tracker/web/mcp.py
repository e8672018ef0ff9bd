"""`gpu-tracker mcp`: the JSON API as a Model Context Protocol server over stdio, for AI
assistants (docs/mcp.md).

Each tool is a command: its arguments are the command's own options, declared once
(`tracker.questions.params`) and checked by them, so a bad one is refused in the command's own
words; its answer is the command's `--format json` document, as text and as structured content
(`{"rows": [...]}`). The JSON API's functions answer (`tracker.web.api`), the same the
dashboard's `/api/*` use. Reads go through the store's reader gate like every reader, each in a
worker thread so that one slow query does not hold the session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import click
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from collectors import REGISTRY
from collectors.common import StoreError
from tracker.config import Config
from tracker.questions import documents
from tracker.questions.types import PROVIDER
from tracker.web import api, market

Answer = Callable[[Config, dict[str, Any]], list[dict[str, Any]]]
_ROWS_SCHEMA = {
    "type": "object",
    "properties": {"rows": {"type": "array", "items": {"type": "object"}}},
    "required": ["rows"],
}


@dataclass(frozen=True)
class Tool:
    """One tool: its command's name, what a model reads to choose it, its arguments' schema and
    the function answering it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    answer: Answer

    def declared(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=_ROWS_SCHEMA,
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        )


def tools() -> dict[str, Tool]:
    """Every tool, by name."""
    found = [
        Tool("latest", _LATEST, api.schema_of(api.LATEST), _from_api(api.latest, work=True)),
        Tool("history", _HISTORY, api.schema_of(api.HISTORY), _from_api(api.history)),
        Tool("tco", _TCO, api.schema_of(api.TCO), _from_api(api.tco, work=True)),
        Tool("index", _INDEX, api.schema_of(api.INDEX), _from_api(market.api_index)),
        Tool("gpus", _GPUS, _GPUS_SCHEMA, _gpus),
        Tool("sql", _SQL, _SQL_SCHEMA, _sql),
    ]
    return {tool.name: tool for tool in found}


def _from_api(function: Callable[..., list[dict[str, Any]]], *, work: bool = False) -> Answer:
    """A JSON API function, its query built from the tool's arguments (`work`: it prices
    workloads, the config's own over the bundled ones)."""

    def answer(config: Config, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        more = {"workloads": config.workloads} if work else {}
        query = _query(arguments)
        return function(config.store_path, query, timeout_s=config.store.query_timeout_s, **more)

    return answer


def _query(arguments: Mapping[str, Any]) -> dict[str, list[str]]:
    """Tool arguments as the query parameters the JSON API reads (`true` for a set switch)."""
    query: dict[str, list[str]] = {}
    for name, value in arguments.items():
        values = value if isinstance(value, list) else [value]
        query[name] = ["true" if v is True else "false" if v is False else str(v) for v in values]
    return query


def _gpus(config: Config, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    from tracker.questions import gpus as gpu_rows

    unexpected = set(arguments) - set(_GPUS_SCHEMA["properties"])
    if unexpected:
        raise api.BadRequest(f"unknown argument {sorted(unexpected)[0]!r} (accepted: unknown, "
                             "types, provider)")  # fmt: skip
    provider = arguments.get("provider")
    if provider is not None:  # the command's own check, and its words
        try:
            provider = PROVIDER.convert(provider, None, None)
        except click.BadParameter as exc:
            raise api.BadRequest(exc.format_message()) from exc
    unknown, types = bool(arguments.get("unknown")), bool(arguments.get("types"))
    rows = gpu_rows.answer(config, unknown=unknown, types=types, provider=provider)
    return [{k: documents.plain(v) for k, v in row.items()} for row in rows]


def _sql(config: Config, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    from storage.query import QueryRefused, QueryStopped, query

    text = arguments.get("query")
    if not isinstance(text, str) or not text.strip():
        raise api.BadRequest("query: a SELECT over the views (prices, latest_prices, ...)")
    limit = config.store.query_timeout_s
    try:
        result = query(config.store_path, text, timeout_s=limit)
    except QueryRefused as exc:
        raise api.BadRequest(str(exc)) from exc
    except QueryStopped as exc:
        raise api.BadRequest(
            f"the query ran longer than {limit:g} s ([storage] query_timeout) and was stopped: "
            "narrow it"
        ) from exc
    return api.bounded(documents.records(result))


def server(config: Config) -> Server[Any]:
    """The MCP server answering from `config`'s store."""
    from importlib.metadata import version

    found = tools()

    async def list_tools(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool.declared() for tool in found.values()])

    async def call_tool(
        _ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = found.get(params.name)
        if tool is None:
            return _refused(f"unknown tool {params.name!r} (tools: {', '.join(found)})")
        arguments = dict(params.arguments or {})
        try:
            rows = await anyio.to_thread.run_sync(tool.answer, config, arguments)
        except api.BadRequest as exc:
            return _refused(str(exc))
        except StoreError as exc:
            return _refused(str(exc))
        return types.CallToolResult(
            content=[types.TextContent(text=documents.dumps(rows))],
            structured_content={"rows": rows},
        )

    return Server(
        "gpu-price-tracker",
        version=version("gpu-price-tracker"),
        instructions=_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _refused(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def run(config: Config) -> None:
    """Serve MCP on this process's stdin and stdout until the client closes them."""
    app = server(config)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await app.run(read, write, app.create_initialization_options())

    anyio.run(main)


_INSTRUCTIONS = (
    "Cloud GPU prices from the tracker's own history (a DuckDB store its daemon fills from each "
    "cloud's pricing API): current offers (latest), statistics of how prices moved (history), "
    "the total cost of a GPU need per rental strategy (tco), the market index per day (index), "
    "the GPU models known (gpus), and "
    "read-only SQL over the views prices, latest_prices and collection_runs (sql). Prices are in "
    "the provider's currency unless a field ends in _usd; per hour unless it says otherwise."
)
_LATEST = (
    "The cheapest GPU cloud offers that can be rented now, across every tracked provider: one "
    "row per offer with provider, region, instance_type, price_kind (on_demand, spot, "
    "reserved), gpu_model, gpu_count, gpu_memory_gib, price_per_hour and price_per_gpu_hour in "
    "its currency (usd=true ranks every currency together in USD), and pflops_per_usd. Use it "
    "for 'where is the cheapest H100 right now?' (gpu='H100', usd=true)."
)
_HISTORY = (
    "How prices moved over a window (since, until: '30d', '2026-06-01'): per price series "
    "(provider, region, instance type, kind) its time-weighted mean, min, max, last price and "
    "changes. Use it for 'how did spot A100 prices move this month?'."
)
_TCO = (
    "The total cost of renting a number of GPUs (gpus) of one model for months, per strategy: "
    "on-demand, spot (with its interruption overhead), reserved terms and a blend, cheapest "
    "first, in USD. Use it for 'what do 8 H100s cost for a year?' (gpu='H100', gpus=8, "
    "months=12)."
)
_INDEX = (
    "The market index: per day, GPU model and memory size, and price kind (on_demand, spot), "
    "the median over providers of each provider's median USD per GPU-hour "
    "(index_usd_per_gpu_hour), with the number of providers, a 95% interval (ci_low, ci_high; "
    "from 6 providers) and low_confidence under 3; per segment (all, hyperscaler, neocloud, "
    "marketplace). Use it for 'what does an H100 hour cost on the market, and where is it "
    "going?' (gpu='H100', kind='on_demand', since='180d')."
)
_GPUS = (
    "The GPU models the tracker knows (memory variants, FP16/FP32 TFLOPS and their sources), the "
    "instance types with GPU facts (types=true, or provider=...), or (unknown=true) instance "
    "types seen in the store without GPU facts."
)
_GPUS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "unknown": {"type": "boolean", "description": "Types seen without GPU facts."},
        "types": {"type": "boolean", "description": "Instance types instead of models."},
        "provider": {"enum": sorted(REGISTRY), "description": "One provider's types."},
    },
    "additionalProperties": False,
}
_SQL = (
    "A read-only SQL query (DuckDB dialect) over the store's views: prices (every price "
    "interval: valid_from, valid_to, price_per_hour, price_per_gpu_hour_usd ...), latest_prices "
    "(the current ones), collection_runs. Nothing but the store can be read, and a query stops "
    "after the configured time limit. Use it when the other tools do not answer the question."
)
_SQL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "One SELECT statement."}},
    "required": ["query"],
    "additionalProperties": False,
}
