"""Service tokens (access and roles): minting, verification, expiry, key rotation and scopes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.kit.auth import (
    SERVICE_ROLES,
    AuthConfigError,
    Caller,
    Role,
    ServiceKey,
    TokenError,
    TokenSigner,
    check_roles_cover,
    mint_token,
    parse_keys,
    signing_key,
    verify_token,
)

EVERY_ROLE = frozenset(Role)
OLD = ServiceKey("k2026a", b"old-secret-0123456789", EVERY_ROLE)
NEW = ServiceKey("k2026b", b"new-secret-0123456789", EVERY_ROLE)
PLAYSITE = ServiceKey("playsite", b"playsite-secret-0123456789", frozenset({Role.PLAY_SITE}))


def test_a_token_names_its_caller_and_role_until_it_expires() -> None:
    token = mint_token(NEW, Role.PLAY_SITE, "web-1", expires_at=1_000)
    assert verify_token(token, {NEW.key_id: NEW}, now=999) == Caller("web-1", Role.PLAY_SITE)
    with pytest.raises(TokenError, match="expired"):
        verify_token(token, {NEW.key_id: NEW}, now=1_001)


def test_rotation_accepts_both_keys_then_refuses_the_retired_one() -> None:
    old_token = mint_token(OLD, Role.PAIRING, "pairing", 10_000)
    both = {OLD.key_id: OLD, NEW.key_id: NEW}
    assert verify_token(old_token, both, 0).role is Role.PAIRING
    assert verify_token(mint_token(NEW, Role.PAIRING, "pairing", 10_000), both, 0).role is Role.PAIRING
    with pytest.raises(TokenError, match="unknown or retired key 'k2026a'"):
        verify_token(old_token, {NEW.key_id: NEW}, 0)


def test_a_key_signs_only_for_its_roles() -> None:
    with pytest.raises(AuthConfigError, match="may sign only for play-site, not pairing"):
        mint_token(PLAYSITE, Role.PAIRING, "mallory", 10_000)
    with pytest.raises(AuthConfigError, match="not pairing"):
        TokenSigner(PLAYSITE, Role.PAIRING)


def test_a_token_whose_role_the_key_was_not_given_is_refused() -> None:
    """A secret shared beyond its scope: the server's AUTH_KEYS say which roles the key signs."""
    wide = ServiceKey(PLAYSITE.key_id, PLAYSITE.secret, EVERY_ROLE)
    token = mint_token(wide, Role.PAIRING, "mallory", 10_000)
    with pytest.raises(TokenError, match="may not sign for role 'pairing'"):
        verify_token(token, {PLAYSITE.key_id: PLAYSITE}, 0)


def test_old_tokens_without_a_role_are_refused_with_how_to_mint_a_new_one() -> None:
    roleless = "arb1.k2026b.play-site.99999999999.c2lnbmF0dXJl"
    with pytest.raises(TokenError, match=r"names no role: mint a new one \(arbiter auth token --role ROLE\)"):
        verify_token(roleless, {NEW.key_id: NEW}, 0)


def test_a_token_signed_with_another_secret_is_refused() -> None:
    forged = mint_token(ServiceKey(NEW.key_id, b"not-the-real-secret!!", EVERY_ROLE), Role.PLAY_SITE, "x", 10_000)
    with pytest.raises(TokenError, match="signature"):
        verify_token(forged, {NEW.key_id: NEW}, 0)


@given(st.text(max_size=80))
def test_garbage_is_never_accepted(garbage: str) -> None:
    with pytest.raises(TokenError):
        verify_token(garbage, {NEW.key_id: NEW}, 0)


@given(st.integers(min_value=0, max_value=5), st.integers(min_value=0, max_value=60))
def test_changing_any_part_of_a_token_breaks_it(part: int, shift: int) -> None:
    token = mint_token(NEW, Role.PLAY_SITE, "web-1", 10_000)
    pieces = token.split(".")
    pieces[part] = pieces[part] + "x" * (1 + shift % 3)
    with pytest.raises(TokenError):
        verify_token(".".join(pieces), {NEW.key_id: NEW}, 0)


def test_key_lists_are_parsed_and_bad_ones_refused_with_a_reason() -> None:
    assert parse_keys("") == {}
    keys = parse_keys(" a:0123456789abcdef:play-site , b:fedcba9876543210:pairing+arena ")
    assert set(keys) == {"a", "b"} and keys["a"].secret == b"0123456789abcdef"
    assert keys["b"].roles == {Role.PAIRING, Role.ARENA}
    assert parse_keys(keys["b"].text()) == {"b": keys["b"]}
    with pytest.raises(AuthConfigError, match="at least 16 bytes"):
        parse_keys("a:short:play-site")
    with pytest.raises(AuthConfigError, match="listed twice"):
        parse_keys("a:0123456789abcdef:operator,a:0123456789abcdef:operator")
    with pytest.raises(AuthConfigError, match="id:secret:role"):
        parse_keys("no-secret-here")
    with pytest.raises(AuthConfigError, match="auth key a names no roles"):
        parse_keys("a:0123456789abcdef")
    with pytest.raises(AuthConfigError, match="unknown role.*referee"):
        parse_keys("a:0123456789abcdef:referee")
    with pytest.raises(AuthConfigError, match="exactly one"):
        signing_key("a:0123456789abcdef:operator,b:0123456789abcdef:operator")
    assert signing_key("") is None


def test_the_signer_renews_its_token_before_it_expires() -> None:
    clock = [0.0]
    signer = TokenSigner(NEW, Role.ARENA, lifetime_s=100, now=lambda: clock[0])
    first = signer.token()
    clock[0] = 40
    assert signer.token() == first
    clock[0] = 60
    renewed = signer.token()
    assert renewed != first and verify_token(renewed, {NEW.key_id: NEW}, now=150) == Caller("arena", Role.ARENA)


def test_every_rpc_of_every_service_names_its_roles() -> None:
    """A service whose table misses an RPC (or names one it lacks) does not start."""
    from arbiter.kit.grpcserver import rpc_names
    from services.arena.servicer import RPC_ROLES as arena
    from services.clock.servicer import RPC_ROLES as clock
    from services.openings.servicer import RPC_ROLES as openings
    from services.pairing.servicer import RPC_ROLES as pairing
    from services.rating.servicer import RPC_ROLES as rating

    tables = {"TournamentService": pairing, "ClockService": clock, "ArenaService": arena,
              "RatingService": rating, "OpeningService": openings}
    for name, roles in tables.items():
        check_roles_cover(name, rpc_names(f"arbiter.contracts.{name}"), roles)
    assert openings["DrawOpening"] == {Role.PAIRING}
    with pytest.raises(ValueError, match=r"no roles for \['CheckRated'\]"):
        check_roles_cover("OpeningService", rpc_names("arbiter.contracts.OpeningService"),
                          {k: v for k, v in openings.items() if k != "CheckRated"})
    # Only services call services: no service role may act for a player.
    for roles in tables.values():
        for name in ("CreateTournament", "JoinTournament", "CreateArena", "JoinArena", "Refuel", "ResolveClaim"):
            assert not roles.get(name, frozenset()) & (SERVICE_ROLES | {Role.OPERATOR})


def test_cli_makes_a_scoped_key_and_mints_a_token_it_verifies(capsys) -> None:
    import json

    from arbiter_tools.cli.main import main

    assert main(["auth", "new-key", "--id", "ops1", "--roles", "operator", "--json"]) == 0
    key_text = json.loads(capsys.readouterr().out)["key"]
    assert key_text.endswith(":operator")
    assert main(["auth", "token", "--key", key_text, "--role", "operator", "--caller", "alice", "--json"]) == 0
    minted = json.loads(capsys.readouterr().out)
    assert minted["role"] == "operator"
    assert verify_token(minted["token"], parse_keys(key_text), now=minted["expires"] - 1) == Caller(
        "alice", Role.OPERATOR)
    assert main(["auth", "token", "--key", key_text, "--role", "pairing"]) == 2
    assert "may sign only for operator, not pairing" in capsys.readouterr().err
    assert main(["auth", "token", "--key", "ops1:short:operator", "--role", "operator"]) == 2
    assert "at least 16 bytes" in capsys.readouterr().err
    assert main(["auth", "new-key", "--roles", "wizard"]) == 2
    assert "unknown role(s) wizard" in capsys.readouterr().err
