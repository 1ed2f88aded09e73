"""Russian: num2words' own reading of fractions ("три целых четырнадцать сотых"), ordinals in
the case and gender their suffix writes ("2-го" → "второго"), dates with the day in the neuter
and the year in the genitive ("первое декабря ... года", "в ... году"), "одна" and "две" before
feminine units and nouns, units written in Cyrillic ("км", "кг"), and the abbreviations
("т. е.", "ул.").
"""

from .base import Language

RUSSIAN = Language(
    code="ru",
    decimal_word="запятая",
    fraction_style="num2words",
    minus="минус",
    plus="плюс",
    equals="равно",
    and_word="и",
    at="собака",
    dot="точка",
    times="на",
    approx="примерно",
    feminine_units=frozenset(("clock-minute", "duration-minute", "duration-second", "mass-tonne")),
    feminine_numbers={"один": "одна", "два": "две"},
    # fmt: off
    feminine_nouns=frozenset((
        "минута", "минуты", "минут", "секунда", "секунды", "секунд", "неделя", "недели",
        "недель", "штука", "штуки", "штук", "тонна", "тонны", "тонн",
    )),
    # fmt: on
    date_format="{day} {month} {year} года",
    # the day is said in the neuter ("первое декабря"), in the genitive or dative after these
    # prepositions; after others ("в", "на") it stays nominative, which is approximate
    day_form="nn",
    day_form_after={"до": "gn", "с": "gn", "со": "gn", "от": "gn", "после": "gn", "к": "dn"},
    year_form="gm",
    year_words={
        "г.": ("года", "gm"),
        "года": ("года", "gm"),
        "году": ("году", "pm"),
        "год": ("год", "nm"),
    },
    year_after={"в": ("году", "pm")},  # prepositional: "в две тысячи двадцать шестом году"
    clock="{hours} {minutes}",
    clock_hour="{hours}",
    # num2words' case (nominative, genitive, dative, accusative, instrumental, prepositional)
    # and gender (masculine, feminine, neuter, plural) for what follows the hyphen
    ordinal_suffixes={
        "-й": "nm",
        "-ый": "nm",
        "-ий": "nm",
        "-ой": "nm",
        "-го": "gm",
        "-му": "dm",
        "-м": "pm",
        "-е": "nn",
        "-ое": "nn",
        "-я": "nf",
        "-ая": "nf",
        "-ю": "af",
        "-ей": "gf",
        "-х": "gp",
    },
    scales=("тысяч", "тысячи", "тысяча", "миллионов", "миллиона", "миллион", "миллиардов"),
    # fmt: off
    unit_symbols={
        "км": "length-kilometer", "м": "length-meter", "см": "length-centimeter",
        "мм": "length-millimeter", "кг": "mass-kilogram", "г": "mass-gram", "мг": "mass-milligram",
        "л": "volume-liter", "мл": "volume-milliliter", "ч": "duration-hour",
        "мин": "duration-minute", "км/ч": "speed-kilometer-per-hour",
        "м/с": "speed-meter-per-second", "кВт·ч": "energy-kilowatt-hour", "кВт": "power-kilowatt",
        "Вт": "power-watt", "гПа": "pressure-hectopascal", "ГБ": "digital-gigabyte",
        "МБ": "digital-megabyte",
    },
    # fmt: on
    abbreviations={
        "т.е.": "то есть",
        "т. е.": "то есть",
        "и т.д.": "и так далее",
        "и т. д.": "и так далее",
        "и т.п.": "и тому подобное",
        "и т. п.": "и тому подобное",
        "т.к.": "так как",
        "и др.": "и другие",
        "ул.": "улица",
        "пр.": "проспект",
        "стр.": "страница",
        "тыс.": "тысяч",
        "млн": "миллионов",
        "млрд": "миллиардов",
    },
    titles=frozenset(("т.е.", "т. е.", "т.к.", "ул.", "пр.", "стр.")),
)
