"""The ads vocabulary, in one place: acronyms and their long forms, which words name a KPI or a
channel, and which direction of a KPI is good.

Every module that needs to know what "tCPA" or "cost per lead" means asks here, so ranking,
resolution, trends and extraction agree. These are facts of the advertising domain (as Google Ads
and Meta define them), never words taken from a particular conversation.
"""

from __future__ import annotations

#: What a "cost per ..." can be per that is not an acquisition: a period, or another KPI's unit.
NOT_ACQUISITIONS = (
    "day", "week", "month", "year", "hour", "night",
    "click", "view", "impression", "engagement", "mille", "thousand", "1k", "1,?000",
)  # fmt: skip
#: Long forms folded to their acronym before tokenizing; longest first, so "target cost per
#: acquisition" becomes "tcpa", never "target cpa".
ACRONYM_PHRASES: tuple[tuple[str, str], ...] = (
    (r"target cost per (acquisition|action|conversion)", "tcpa"),
    (r"target return on ad(vertising)? spend", "troas"),
    (r"cost per (acquisition|action|conversion)", "cpa"),
    (r"cost per lead", "cpl"),
    (r"return on ad(vertising)? spend", "roas"),
    (r"click[ -]?through[ -]?rates?", "ctr"),
    (r"cost per click", "cpc"),
    (r"cost per (mille|thousand( impressions)?)", "cpm"),
    (r"conversion rates?", "cvr"),
    (r"average order value", "aov"),
    (r"target cpa", "tcpa"),
    (r"target roas", "troas"),
    (r"\bt-cpa\b", "tcpa"),
    (r"\bt-roas\b", "troas"),
)
#: Any other "cost per <thing>" is a cost per acquisition of that thing ("cost per install",
#: "cost per trial"): a task about CPA finds it, and it finds a stored CPA (applied after
#: ACRONYM_PHRASES). Periods, and what a cost per click, view, engagement or thousand
#: impressions measures (in either of the next two words), are not acquisitions.
COST_PER_THING: tuple[str, str] = (
    r"\bcost per (?!(?:\S+ )?(?:" + "|".join(NOT_ACQUISITIONS) + r")s?\b)([a-z0-9]+)",
    r"\1 cpa",
)
#: A term that is also about a broader KPI: a task on "CPA" should find "switched to tCPA",
#: and cost per lead is a cost per acquisition where the acquisition is a lead.
KPI_EXPANSIONS: dict[str, tuple[str, ...]] = {
    "tcpa": ("tcpa", "cpa"),
    "troas": ("troas", "roas"),
    "cpl": ("cpl", "cpa"),
}
#: Acronyms that end in "s" and must not be stemmed as plurals.
NO_STEM = frozenset({"roas", "troas", "ios", "analytics", "ads", "sms", "news", "gas"})

#: KPI acronyms, where a lower value is better and where a higher one is.
LOWER_IS_BETTER = frozenset({"cpa", "tcpa", "cpl", "cpc", "cpm", "cost", "spend", "bounce"})
HIGHER_IS_BETTER = frozenset(
    {
        "roas",
        "troas",
        "ctr",
        "cvr",
        "conversion",
        "revenue",
        "impression",
        "click",
        "margin",
        "aov",
        "value",
        "share",
    }
)
#: Words that make two names different measurements ("Alpha CPA" is not "Alpha CPC").
KPI_TERMS = LOWER_IS_BETTER | HIGHER_IS_BETTER | {"budget", "rate"}
#: Words of a figure's label that make it an amount of money ("cost per lead", "spend").
MONEY_TERMS = (LOWER_IS_BETTER - {"bounce"}) | {"costs", "cac", "spent", "revenue", "budget"}

#: Channel and campaign-kind words ("Brand Search" is not "Brand Shopping").
CHANNEL_TERMS = frozenset(
    {
        "search",
        "shopping",
        "pmax",
        "display",
        "video",
        "brand",
        "branded",
        "nonbrand",
        "generic",
        "competitor",
        "remarketing",
        "retargeting",
        "youtube",
        "discovery",
        "demand",
    }
)

#: Bid strategies as Google Ads and Meta name them: a pattern and the canonical name. Longest
#: first, so "maximize conversion value" is not read as "maximize conversions".
BID_STRATEGIES: tuple[tuple[str, str], ...] = (
    (r"maximi[sz]e conversion value", "Maximize Conversion Value"),
    (r"maximi[sz]e conversions?", "Maximize Conversions"),
    (r"maximi[sz]e clicks", "Maximize Clicks"),
    (r"target impression share", "Target Impression Share"),
    (r"target cost per (?:acquisition|action|conversion)|target cpa|t-?cpa", "Target CPA"),
    (r"target return on ad(?:vertising)? spend|target roas|t-?roas", "Target ROAS"),
    (r"enhanced cpc|ecpc", "Enhanced CPC"),
    (r"manual cpc|manual bidding|manual bids", "Manual CPC"),
    (r"lowest cost|cost cap|bid cap", "Lowest Cost"),
)

#: Campaign statuses (Google Ads: enabled, paused, removed; "active"/"live" are common synonyms).
STATUSES: dict[str, str] = {
    "paused": "paused",
    "enabled": "enabled",
    "active": "enabled",
    "live": "enabled",
    "removed": "removed",
    "ended": "ended",
}

#: Each KPI's name (what a metric is stored under) and the ways people write it, the
#: acronym last. Both KPI tables below are made from it.
_KPIS: tuple[tuple[str, str], ...] = (
    ("CPA", r"cost per (?:acquisition|action|conversion)|cpa"),
    ("ROAS", r"return on ad(?:vertising)? spend|roas"),
    ("CTR", r"click[ -]?through[ -]?rates?|ctr"),
    ("CPC", r"cost per click|cpc"),
    ("CPM", r"cost per (?:mille|thousand(?: impressions)?)|cpm"),
    ("CPL", r"cost per lead|cpl"),
    ("conversion rate", r"conversion rates?|cvr"),
    ("AOV", r"average order value|aov"),
)
#: KPIs as people write them: a pattern and the display name a metric is stored under.
KPI_NAMES: tuple[tuple[str, str], ...] = (
    *((pattern, name) for name, pattern in _KPIS),
    (r"impression share", "impression share"),
)

#: Ad platforms: an advertiser's budget is often stated per platform ("Meta goes to $70").
PLATFORMS: tuple[str, ...] = (
    "Google",
    "Meta",
    "Facebook",
    "Instagram",
    "Microsoft",
    "Bing",
    "TikTok",
    "LinkedIn",
    "YouTube",
    "Pinterest",
    "Snapchat",
    "Amazon",
)

#: The categories a preference is stored under.
PREFERENCE_CATEGORIES: tuple[str, ...] = ("communication", "analysis", "risk", "reporting")
#: Words clients send for those categories (lower case, words joined by `_`): only names of
#: the same thing. Anything else is refused with the list of categories, never guessed.
PREFERENCE_CATEGORY_SYNONYMS: dict[str, str] = {
    "communications": "communication",
    "tone": "communication",
    "analytics": "analysis",
    "analyses": "analysis",
    "risks": "risk",
    "risk_tolerance": "risk",
    "risk_appetite": "risk",
    "bidding": "risk",
    "bids": "risk",
    "bid_strategy": "risk",
    "bidding_strategy": "risk",
    "report": "reporting",
    "reports": "reporting",
}


def preference_category(value: str) -> str | None:
    """The category `value` names (itself or a synonym, any case and spacing), else None."""
    key = "_".join(value.strip().lower().replace("-", " ").split())
    if key in PREFERENCE_CATEGORIES:
        return key
    return PREFERENCE_CATEGORY_SYNONYMS.get(key)


#: What a cost is counted per when it is a cost per acquisition: a conversion action as the ad
#: platforms count them (a purchase, a booking, a sign-up, ...). A lead has a KPI of its own.
CONVERSION_NOUNS = (
    r"acquisitions?|actions?|conversions?|bookings?|sales?|orders?|purchases?|sign[- ]?ups?|"
    r"customers?|transactions?|registrations?|subscriptions?|installs?"
)
#: KPIs that are one measurement under different words: a pattern and the canonical KPI. Two
#: metrics of one owner whose KPIs canonicalise alike are one metric (extraction/resolve.py).
KPI_SYNONYMS: tuple[tuple[str, str], ...] = tuple(
    # Any conversion action's cost is a CPA ("cost per booking").
    (rf"cost per (?:{CONVERSION_NOUNS})|cpa" if name == "CPA" else pattern, name)
    for name, pattern in _KPIS
)


#: Words that name the kind of thing, not the thing ("Campaign Alpha" is "Alpha"), left out
#: when names are compared (resolution, links, grounding).
GENERIC_NAME_WORDS = frozenset({"campaign", "campaigns", "the"})
