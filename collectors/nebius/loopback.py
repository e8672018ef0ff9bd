"""A gRPC front on loopback for Nebius' recorded answers, for the offline demo and the tests.

Nebius' API is gRPC only, so its recording is kept as ProtoJSON (the JSON form of each
protobuf answer) in the replay format every recording uses (`exchanges.json`). The front
listens for plain (unencrypted) gRPC on 127.0.0.1 and hands each call to an `Answer` (the
replay server's matching): method "POST", path the full gRPC method
(`/nebius.billing.v1alpha1.CalculatorService/Estimate`), the call's metadata as headers and
the request as ProtoJSON body. The exchange's body is encoded with the SDK's own message
classes; its HTTP status becomes the gRPC status the SDK meets from the real API (5xx:
UNAVAILABLE, which the SDK retries; 429: RESOURCE_EXHAUSTED; 401: UNAUTHENTICATED).
"""

from __future__ import annotations

import json
import threading
import time
from concurrent import futures
from typing import Any, Protocol

import grpc
from nebius.api.nebius.billing.v1alpha1 import EstimateRequest, EstimateResponse
from nebius.api.nebius.compute.v1 import ListPlatformsRequest, ListPlatformsResponse
from nebius.api.nebius.iam.v2 import (
    ListProjectsRequest,
    ListProjectsResponse,
    ListTenantsRequest,
    ListTenantsResponse,
)
from nebius.base.protos.direct import Message
from nebius.base.protos.json_format import message_from_json, message_to_dict

# The calls the collector makes: full method -> (request class, answer class).
METHODS: dict[str, tuple[type[Message], type[Message]]] = {
    "/nebius.iam.v2.TenantService/List": (ListTenantsRequest, ListTenantsResponse),
    "/nebius.iam.v2.ProjectService/List": (ListProjectsRequest, ListProjectsResponse),
    "/nebius.compute.v1.PlatformService/List": (ListPlatformsRequest, ListPlatformsResponse),
    "/nebius.billing.v1alpha1.CalculatorService/Estimate": (EstimateRequest, EstimateResponse),
}
STATUSES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
}


# The recorded answer to one call: HTTP-like status, body, a hold to wait on, a delay.
Answered = tuple[int, bytes, threading.Event | None, float]


class Replay(Protocol):
    """The replay server's matching, for calls that come another way than HTTP."""

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> Answered | None: ...


def front(replay: Replay) -> GrpcFront:
    """A gRPC front answering from `replay` (not started): what the demo's `front` names."""
    return GrpcFront(replay)


class GrpcFront:
    """Plain gRPC on 127.0.0.1 answering from `answer`; `url` is what the collector is given."""

    def __init__(self, replay: Replay) -> None:
        self._replay = replay
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        self._server.add_generic_rpc_handlers([_Handlers(self)])
        self._port = self._server.add_insecure_port("127.0.0.1:0")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> GrpcFront:
        self._server.start()
        return self

    def stop(self) -> None:
        # A held answer is released by its test; none is waited for here.
        self._server.stop(grace=None)

    def call(self, method: str, request: Message, context: grpc.ServicerContext) -> Message:
        answer_class = METHODS[method][1]
        headers = {key.lower(): str(value) for key, value in context.invocation_metadata()}
        body = json.dumps(message_to_dict(request)).encode()
        answered = self._replay.answer("POST", method, headers, body)
        if answered is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no recorded exchange matches {method}")
            raise AssertionError  # unreachable: abort raised
        status, payload, hold, delay = answered
        if hold is not None:
            hold.wait()
        if delay:
            time.sleep(delay)
        if status != 200:
            code = STATUSES.get(status, grpc.StatusCode.UNAVAILABLE)
            context.abort(code, payload.decode("utf-8", "replace")[:300])
        try:
            return message_from_json(payload, answer_class(), ignore_unknown_fields=True)
        except (ValueError, TypeError, RecursionError) as exc:  # a hostile recording
            context.abort(grpc.StatusCode.INTERNAL, f"answer not encodable: {exc!s:.200}")
            raise  # unreachable: abort raised


class _Handlers(grpc.GenericRpcHandler):  # type: ignore[misc]
    def __init__(self, front: GrpcFront) -> None:
        self._front = front

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Any:
        method: str = handler_call_details.method
        if method not in METHODS:
            return None  # the client gets UNIMPLEMENTED
        request_class = METHODS[method][0]

        def unary(request: Message, context: grpc.ServicerContext) -> Message:
            return self._front.call(method, request, context)

        return grpc.unary_unary_rpc_method_handler(
            unary,
            request_deserializer=request_class.FromString,
            response_serializer=lambda message: message.SerializeToString(),
        )
