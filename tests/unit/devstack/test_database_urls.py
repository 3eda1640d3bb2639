"""The devstack's PostgreSQL URL helpers: another database, another role, the rest of the URL kept."""

from __future__ import annotations

from arbiter_tools.devstack.infra import with_database, with_user


def test_with_database_keeps_the_server_role_and_options() -> None:
    assert (with_database("postgresql://postgres@127.0.0.1:5432/postgres?sslmode=disable", "arbiter_capacity")
            == "postgresql://postgres@127.0.0.1:5432/arbiter_capacity?sslmode=disable")


def test_with_user_replaces_the_role_and_drops_its_password() -> None:
    assert (with_user("postgresql://postgres:secret@127.0.0.1:5432/arbiter_capacity", "svc_rating")
            == "postgresql://svc_rating@127.0.0.1:5432/arbiter_capacity")


def test_with_user_adds_a_role_to_a_url_without_one() -> None:
    assert with_user("postgresql://127.0.0.1:5432/x?sslmode=disable", "svc_arena") == (
        "postgresql://svc_arena@127.0.0.1:5432/x?sslmode=disable")
