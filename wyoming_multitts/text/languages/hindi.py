"""Hindi: numbers from indic-numtowords, years 1100–1999 in hundreds ("उन्नीस सौ चौरासी"),
times with "बजकर" and "बजे", the rupee and its paise, and the abbreviations ("डॉ.").
"""

from .base import Language

HINDI = Language(
    code="hi",
    number_engine="indic",
    decimal_word="दशमलव",
    minus="माइनस",
    plus="प्लस",
    equals="बराबर",
    and_word="और",
    at="एट",
    dot="डॉट",
    times="गुणा",
    approx="लगभग",
    range_format="{} से {}",
    year_hundred="सौ",
    clock="{hour} बजकर {minute} मिनट",
    clock_hour="{hour} बजे",
    time_suffix="बजे",
    currency_names={"INR": (("रुपया", "रुपये"), ("पैसा", "पैसे")), "USD": (("डॉलर",), ("सेंट",))},
    currency_symbols={"रु.": "INR"},
    scales=("हज़ार", "लाख", "करोड़"),
    abbreviations={"डॉ.": "डॉक्टर", "कि.मी.": "किलोमीटर", "प्रो.": "प्रोफ़ेसर"},
    titles=frozenset(("डॉ.", "प्रो.")),
)
