from entity_memory.domain.context import assemble_entity_context, estimate_tokens


def ent(type: str, name: str, content: str = "short fact") -> dict:
    return {"type": type, "name": name, "content": content}


def test_sections_in_spec_order_with_spec_labels_and_format() -> None:
    text = assemble_entity_context(
        [
            ent("metric", "Alpha CPA", "CPA is $42"),
            ent("campaign", "Campaign Alpha", "on tCPA"),
            ent("preference", "Weekly bullets", "short summaries"),
            ent("decision", "Switch to tCPA", "done Tuesday"),
            ent("pain_point", "Tracking", "keeps breaking"),
        ]
    )
    assert text == (
        "<entity_memory>\n"
        "\n### User Preferences\n- **Weekly bullets**: short summaries\n\n"
        "\n### Known Pain Points\n- **Tracking**: keeps breaking\n\n"
        "\n### Prior Decisions\n- **Switch to tCPA**: done Tuesday\n\n"
        "\n### Known Campaigns\n- **Campaign Alpha**: on tCPA\n\n"
        "\n### Historical Metrics\n- **Alpha CPA**: CPA is $42\n\n"
        "</entity_memory>"
    )


def test_at_most_five_per_type_in_given_order() -> None:
    text = assemble_entity_context([ent("campaign", f"C{i}") for i in range(8)])
    assert [f"**C{i}**" in text for i in range(8)] == [True] * 5 + [False] * 3


def test_empty_input_gives_empty_block() -> None:
    assert assemble_entity_context([]) == "<entity_memory>\n</entity_memory>"


def test_token_budget_is_respected_and_no_empty_header() -> None:
    long = "word " * 100  # 130 estimated tokens
    entities = [
        ent("preference", "P", "tiny"),
        ent("decision", "D", long),
        ent("campaign", "C", "small fact"),
    ]
    text = assemble_entity_context(entities, max_tokens=20)
    assert "### User Preferences" in text and "**P**" in text
    # The SPEC would leave "### Prior Decisions" with nothing under it.
    assert "Prior Decisions" not in text
    # A later, smaller item still fits, as in the SPEC.
    assert "**C**" in text
    body = text.removeprefix("<entity_memory>").removesuffix("</entity_memory>")
    used = sum(estimate_tokens(line + "\n") for line in body.splitlines() if line.startswith("- "))
    assert used <= 20
