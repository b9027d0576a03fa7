"""Campaigns whose descriptions share few words with the tasks that mean them (paraphrase,
another language): the semantic channel's test data, on CPython and on the host alike."""

CAMPAIGNS = [
    ("Brand - Exact", "search ads on the company's own trademark terms"),
    ("DACH", "prospecting in German-speaking Europe"),
    ("Shopping feed", "product listing ads from the catalogue"),
    ("Competitor conquest", "bidding on rival companies' names"),
    ("Retargeting", "showing ads again to past site visitors"),
    ("ブランド検索", "自社ブランド名の検索広告キャンペーン"),
]
