"""Service tokens (issue 10, access): minting, verification, expiry and key rotation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.kit.auth import (
    AuthConfigError, ServiceKey, TokenError, TokenSigner, mint_token, parse_keys, signing_key, verify_token,
)

OLD = ServiceKey("k2026a", b"old-secret-0123456789")
NEW = ServiceKey("k2026b", b"new-secret-0123456789")


def test_a_token_names_its_caller_until_it_expires() -> None:
    token = mint_token(NEW, "play-site", expires_at=1_000)
    assert verify_token(token, {NEW.key_id: NEW}, now=999) == "play-site"
    with pytest.raises(TokenError, match="expired"):
        verify_token(token, {NEW.key_id: NEW}, now=1_001)


def test_rotation_accepts_both_keys_then_refuses_the_retired_one() -> None:
    old_token = mint_token(OLD, "pairing", 10_000)
    both = {OLD.key_id: OLD, NEW.key_id: NEW}
    assert verify_token(old_token, both, 0) == "pairing"
    assert verify_token(mint_token(NEW, "pairing", 10_000), both, 0) == "pairing"
    with pytest.raises(TokenError, match="unknown or retired key 'k2026a'"):
        verify_token(old_token, {NEW.key_id: NEW}, 0)


def test_a_token_signed_with_another_secret_is_refused() -> None:
    forged = mint_token(ServiceKey(NEW.key_id, b"not-the-real-secret!!"), "play-site", 10_000)
    with pytest.raises(TokenError, match="signature"):
        verify_token(forged, {NEW.key_id: NEW}, 0)


@given(st.text(max_size=80))
def test_garbage_is_never_accepted(garbage: str) -> None:
    with pytest.raises(TokenError):
        verify_token(garbage, {NEW.key_id: NEW}, 0)


@given(st.integers(min_value=0, max_value=4), st.integers(min_value=0, max_value=60))
def test_changing_any_part_of_a_token_breaks_it(part: int, shift: int) -> None:
    token = mint_token(NEW, "play-site", 10_000)
    pieces = token.split(".")
    pieces[part] = pieces[part] + "x" * (1 + shift % 3)
    with pytest.raises(TokenError):
        verify_token(".".join(pieces), {NEW.key_id: NEW}, 0)


def test_key_lists_are_parsed_and_bad_ones_refused_with_a_reason() -> None:
    assert parse_keys("") == {}
    keys = parse_keys(" a:0123456789abcdef , b:fedcba9876543210 ")
    assert set(keys) == {"a", "b"} and keys["a"].secret == b"0123456789abcdef"
    with pytest.raises(AuthConfigError, match="at least 16 bytes"):
        parse_keys("a:short")
    with pytest.raises(AuthConfigError, match="listed twice"):
        parse_keys("a:0123456789abcdef,a:0123456789abcdef")
    with pytest.raises(AuthConfigError, match="id:secret"):
        parse_keys("no-secret-here")
    with pytest.raises(AuthConfigError, match="exactly one"):
        signing_key("a:0123456789abcdef,b:0123456789abcdef")
    assert signing_key("") is None


def test_the_signer_renews_its_token_before_it_expires() -> None:
    clock = [0.0]
    signer = TokenSigner(NEW, "arena", lifetime_s=100, now=lambda: clock[0])
    first = signer.token()
    clock[0] = 40
    assert signer.token() == first
    clock[0] = 60
    renewed = signer.token()
    assert renewed != first and verify_token(renewed, {NEW.key_id: NEW}, now=150) == "arena"


def test_cli_makes_a_key_and_mints_a_token_it_verifies(capsys) -> None:
    import json

    from arbiter.cli.main import main

    assert main(["auth", "new-key", "--id", "ops1", "--json"]) == 0
    key_text = json.loads(capsys.readouterr().out)["key"]
    assert main(["auth", "token", "--key", key_text, "--caller", "play-site", "--json"]) == 0
    minted = json.loads(capsys.readouterr().out)
    assert verify_token(minted["token"], parse_keys(key_text), now=minted["expires"] - 1) == "play-site"
    assert main(["auth", "token", "--key", "ops1:short", "--caller", "x"]) == 2
    assert "at least 16 bytes" in capsys.readouterr().err
