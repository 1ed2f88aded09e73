"""What each language says for the numbers, dates, times, money and symbols in a sentence.

One module per language (`english.py`, `german.py`, …) holds its `Language` table (`base.py`);
this package holds the currency and unit symbols all languages write, `LANGUAGES` and
`language("de-AT")`, which finds the table for a language code. Number words and month,
currency and unit names come from libraries (num2words, cn2an, indic-numtowords, babel's CLDR
data); the tables hold only what those do not know. Adding a language is one module here and its
line in `LANGUAGES` (docs/text.md).
"""

from __future__ import annotations

import functools

from num2words import CONVERTER_CLASSES

from .base import Language
from .chinese import CHINESE
from .english import ENGLISH
from .french import FRENCH
from .german import GERMAN
from .hindi import HINDI
from .italian import ITALIAN
from .japanese import JAPANESE
from .korean import KOREAN
from .polish import POLISH
from .portuguese import PORTUGUESE
from .russian import RUSSIAN
from .spanish import SPANISH
from .turkish import TURKISH

# ---------------------------------------------------------------------------
# Notation every language shares

# Currency symbols → ISO code (a language's table may say otherwise: "¥" is the yuan in Chinese).
# fmt: off
CURRENCY_SYMBOLS = {
    "$": "USD", "US$": "USD", "R$": "BRL", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR",
    "Rs.": "INR", "₩": "KRW", "₽": "RUB", "руб.": "RUB", "₺": "TRY", "zł": "PLN", "Fr.": "CHF",
    "元": "CNY", "円": "JPY", "원": "KRW",
}
# fmt: on

# ISO currency codes written next to an amount ("12,000 EUR", "CHF 20").
# fmt: off
CURRENCY_CODES = (
    "EUR", "USD", "GBP", "CHF", "JPY", "CNY", "INR", "PLN", "RUB", "TRY", "KRW", "BRL", "CAD",
    "AUD", "SEK", "NOK", "DKK", "CZK",
)
# fmt: on

# Unit symbols written after a number → CLDR unit ("a/b": a compound, "a per b"; CLDR has no
# watt-hour, "energy-watt-hour" is its kilowatt-hour without the "kilo").
# fmt: off
UNITS = {
    "°C": "temperature-celsius", "° C": "temperature-celsius", "℃": "temperature-celsius",
    "°F": "temperature-fahrenheit", "° F": "temperature-fahrenheit", "℉": "temperature-fahrenheit",
    "K": "temperature-kelvin", "°": "angle-degree",
    "km/h": "speed-kilometer-per-hour", "m/s": "speed-meter-per-second",
    "mph": "speed-mile-per-hour",
    "km": "length-kilometer", "m": "length-meter", "cm": "length-centimeter",
    "mm": "length-millimeter", "ft": "length-foot",
    "km²": "area-square-kilometer", "m²": "area-square-meter", "m³": "volume-cubic-meter",
    "kg": "mass-kilogram", "g": "mass-gram", "mg": "mass-milligram", "lb": "mass-pound",
    "l": "volume-liter", "L": "volume-liter", "ml": "volume-milliliter", "mL": "volume-milliliter",
    "h": "duration-hour", "min": "duration-minute", "s": "duration-second",
    "ms": "duration-millisecond",
    "kWh": "energy-kilowatt-hour", "Wh": "energy-watt-hour", "MW": "power-megawatt",
    "kW": "power-kilowatt", "W": "power-watt", "V": "electric-volt", "A": "electric-ampere",
    "mA": "electric-milliampere",
    "hPa": "pressure-hectopascal", "mbar": "pressure-millibar", "bar": "pressure-bar",
    "kB": "digital-kilobyte", "KB": "digital-kilobyte", "MB": "digital-megabyte",
    "GB": "digital-gigabyte", "TB": "digital-terabyte",
    "Hz": "frequency-hertz", "kHz": "frequency-kilohertz", "MHz": "frequency-megahertz",
    "GHz": "frequency-gigahertz",
    "lx": "light-lux", "lux": "light-lux", "ppm": "concentr-part-per-1e6",
    "µg/m³": "mass-microgram/volume-cubic-meter", "μg/m³": "mass-microgram/volume-cubic-meter",
}
# fmt: on

# Unit symbols that are also a letter glued to a number ("4K", "Apt 5A"): units after a space.
SPACED_UNITS = frozenset(("K", "A"))

# The SI prefix "kilo" as CLDR's languages spell it (to say a watt-hour from a kilowatt-hour).
KILO = ("kilo", "chilo", "quilo", "кило", "千", "キロ", "킬로", "किलो")

# num2words languages that never return for some numbers (num2words 0.5.14 `lang_AM.py` loops
# forever on 1234567): their digits are left as they are.
NUM2WORDS_HANGS = frozenset(("am",))

# Every language with a table, by code.
LANGUAGES = {
    table.code: table
    for table in (
        ENGLISH,
        GERMAN,
        FRENCH,
        SPANISH,
        ITALIAN,
        PORTUGUESE,
        POLISH,
        RUSSIAN,
        TURKISH,
        CHINESE,
        JAPANESE,
        KOREAN,
        HINDI,
    )
}


@functools.lru_cache(maxsize=None)
def language(code: str) -> Language:
    """The table for a language code ("de", "de_DE", "de-AT", "DE"): a language without one gets
    a bare table whose numbers come from num2words if it knows the language, else stay digits."""
    base = code.replace("-", "_").split("_")[0].lower()
    if base in LANGUAGES:
        return LANGUAGES[base]
    engine = "num2words" if base in CONVERTER_CLASSES and base not in NUM2WORDS_HANGS else ""
    return Language(code=base, number_engine=engine, fraction_style="num2words")
