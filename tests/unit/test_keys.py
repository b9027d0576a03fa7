import pytest

from entity_memory.domain.keys import (
    InvalidId,
    InvalidType,
    entity_key,
    entity_prefix,
    index_key,
    slug_for,
    validate_id,
)


def test_entity_and_index_keys_follow_the_spec_layout() -> None:
    assert entity_key("u-1", "campaign", "campaign-alpha") == "entity:u-1:campaign:campaign-alpha"
    assert entity_key("ann@x.io", "pain_point", "p.1+2") == "entity:ann@x.io:pain_point:p.1+2"
    assert index_key("u-1") == "index:u-1:entities"
    assert entity_prefix("ann") == "entity:ann:"


@pytest.mark.parametrize(
    "bad",
    [
        "a:b",  # would address another user's keys
        "",
        "x" * 129,
        "..",
        ".",
        "a b",
        "a/b",
        "%3A",
        "a\nb",
        "ab\n",  # a trailing newline must not slip past the pattern
        "\u0430lpha",  # Cyrillic a, a look-alike of Latin a
        "\uff41\uff42\uff43",  # fullwidth letters
        "caf\u00e9",
    ],
)
def test_unsafe_ids_are_rejected(bad: str) -> None:
    with pytest.raises(InvalidId):
        validate_id(bad, "user")
    with pytest.raises(InvalidId):
        entity_key(bad, "campaign", "ok")
    with pytest.raises(InvalidId):
        entity_key("ok", "campaign", bad)
    with pytest.raises(InvalidId):
        index_key(bad)


def test_boundary_ids_are_accepted() -> None:
    assert validate_id("x" * 128) == "x" * 128
    assert validate_id("A.b_c@d+e-9") == "A.b_c@d+e-9"
    assert validate_id("a..b") == "a..b"


def test_non_string_ids_are_rejected() -> None:
    with pytest.raises(InvalidId):
        validate_id(42)  # type: ignore[arg-type]


def test_unknown_type_is_rejected() -> None:
    with pytest.raises(InvalidType):
        entity_key("u", "keyword", "x")
    with pytest.raises(InvalidType):
        entity_key("u", "campaign:x", "y")


def test_slug_is_stable_across_case_spacing_and_punctuation() -> None:
    assert slug_for("Campaign Alpha") == "campaign-alpha"
    assert slug_for("campaign  alpha") == "campaign-alpha"
    assert slug_for("  Campaign-Alpha! ") == "campaign-alpha"
    assert slug_for("Brand_Search (US)") == "brand-search-us"
    assert slug_for("Café Été") == "cafe-ete"


def test_slug_of_non_latin_names_is_valid_and_distinct() -> None:
    a, b = slug_for("キャンペーンA"), slug_for("キャンペーンB")
    plain_a = slug_for("A")
    assert len({a, b, plain_a}) == 3
    for s in (a, b, slug_for("夏のセール")):
        assert validate_id(s) == s


def test_slug_of_long_names_fits_the_id_limit() -> None:
    s = slug_for("word " * 100)
    assert len(s) <= 128
    assert validate_id(s) == s
    assert s != slug_for("word " * 101)


def test_slug_needs_a_name() -> None:
    with pytest.raises(InvalidId):
        slug_for(" !! ")
