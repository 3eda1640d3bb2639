"""Access (issue 10): with AUTH_KEYS set a service refuses calls without a valid token, health stays open."""

from __future__ import annotations

import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arbiter.contracts import openings_pb2, openings_pb2_grpc
from arbiter.kit.auth import ServiceKey, TokenSigner, mint_token
from arbiter.kit.grpcclient import open_channel

OLD = "rot1:old-secret-0123456789"
NEW = "rot2:new-secret-0123456789"


@pytest.fixture
def guarded_openings(start_system):
    """The openings service accepting tokens of two keys (a rotation in progress)."""
    return start_system(("openings",), extra_env={"AUTH_KEYS": f"{OLD},{NEW}", "AUTH_SIGNING_KEY": NEW})


def _key(text: str) -> ServiceKey:
    key_id, _, secret = text.partition(":")
    return ServiceKey(key_id, secret.encode())


async def test_calls_need_a_valid_token_and_refusals_are_counted(guarded_openings) -> None:
    address = guarded_openings.services["openings"].grpc_address
    request = openings_pb2.GetOpeningRequest(variant="italian", number=1)
    async with grpc.aio.insecure_channel(address) as bare:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await openings_pb2_grpc.OpeningServiceStub(bare).GetOpening(request)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "no service token" in refused.value.details()
        health = await health_pb2_grpc.HealthStub(bare).Check(health_pb2.HealthCheckRequest())
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        expired = mint_token(_key(NEW), "play-site", time.time() - 1)
        with pytest.raises(grpc.aio.AioRpcError) as late:
            await openings_pb2_grpc.OpeningServiceStub(bare).GetOpening(
                request, metadata=(("authorization", f"Bearer {expired}"),)
            )
        assert late.value.code() == grpc.StatusCode.UNAUTHENTICATED and "expired" in late.value.details()
    for key in (OLD, NEW):  # both keys of the rotation are accepted
        async with open_channel(address, TokenSigner(_key(key), "play-site")) as channel:
            opening = await openings_pb2_grpc.OpeningServiceStub(channel).GetOpening(request)
            assert opening.number == 1
    import urllib.request

    with urllib.request.urlopen(guarded_openings.services["openings"].metrics_url, timeout=5) as reply:
        text = reply.read().decode()
    assert 'arbiter_refused_calls_total{code="UNAUTHENTICATED",method="GetOpening",service="openings"} 2.0' in text
    # The refused calls are calls all the same: the dashboards' failed-call rates read this series.
    assert 'arbiter_grpc_requests_total{code="UNAUTHENTICATED",method="GetOpening",service="openings"} 2.0' in text
    assert 'arbiter_grpc_requests_total{code="OK",method="GetOpening",service="openings"} 2.0' in text
