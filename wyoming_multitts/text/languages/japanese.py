"""Japanese: words without spaces, years as cardinals (num2words' years are imperial eras),
month names where CLDR writes digits ("十二月"), dates with their marks ("年", "月", "日"), times
with "時" and "分", and the currencies' Japanese names.
"""

from .base import Language

JAPANESE = Language(
    code="ja",
    joiner="",  # years stay cardinals: num2words' to="year" gives an imperial era ("令和八年")
    decimal_word="点",
    minus="マイナス",
    plus="プラス",
    equals="イコール",
    and_word="アンド",
    at="アットマーク",
    dot="ドット",
    times="かける",
    approx="約",
    range_format="{}から{}",
    # fmt: off
    month_names=(
        "一月", "二月", "三月", "四月", "五月", "六月", "七月", "八月", "九月", "十月", "十一月",
        "十二月",
    ),
    # fmt: on
    date_marks=("年", "月", "日"),
    clock="{hour}時{minute}分",
    clock_hour="{hour}時",
    currency_names={
        "JPY": (("円",), ()),
        "USD": (("ドル",), ("セント",)),
        "EUR": (("ユーロ",), ("セント",)),
    },
)
