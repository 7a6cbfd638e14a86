"""OpenAI web-search settings in canonical form: what maps, and every setting that does not, with why."""

from __future__ import annotations

from metis_core.gateway.hosted_tool_asks import web_search_settings

WHERE = {"city": "Paris", "region": "Ile-de-France", "country": "FR", "timezone": "Europe/Paris"}


def test_chat_nests_the_location_and_responses_does_not_both_become_one_canonical_location() -> None:
    chat, _ = web_search_settings({"user_location": {"type": "approximate", "approximate": WHERE}})
    responses, _ = web_search_settings({"type": "web_search", "user_location": {"type": "approximate", **WHERE}})
    assert chat == responses == {"user_location": {"type": "approximate", **WHERE}}


def test_a_partial_location_keeps_the_fields_given_and_an_empty_one_is_named() -> None:
    settings, left_out = web_search_settings({"user_location": {"type": "approximate", "country": "FR",
                                                                "city": None, "region": ""}})
    assert settings == {"user_location": {"type": "approximate", "country": "FR"}} and left_out == {}
    settings, left_out = web_search_settings({"user_location": {"type": "approximate", "approximate": {}}})
    assert settings == {} and list(left_out) == ["user_location"]


def test_allowed_domains_map_and_every_other_setting_is_named_with_its_reason() -> None:
    settings, left_out = web_search_settings({
        "type": "web_search", "search_context_size": "high", "external_web_access": False,
        "filters": {"allowed_domains": ["example.org"], "blocked_domains": ["x.com"]},
    })  # fmt: skip
    assert settings == {"allowed_domains": ["example.org"]}
    assert sorted(left_out) == ["external_web_access", "filters.blocked_domains", "search_context_size"]
    assert "max_uses" in left_out["search_context_size"]  # says why it is not Claude's max_uses
