"""Chinese: numbers from cn2an, written without spaces, years digit by digit ("二零二六"), dates
with their marks ("年", "月", "日"), "两" for two before a counter ("两个") and at two o'clock,
"百分之" before a percentage, "¥" as the yuan, and the currencies' Chinese names.
"""

from .base import Language

CHINESE = Language(
    code="zh",
    number_engine="cn2an",
    joiner="",
    decimal_word="点",
    minus="负",
    plus="加",
    equals="等于",
    and_word="和",
    at="艾特",
    dot="点",
    times="乘",
    approx="约",
    percent="百分之{0}",
    range_format="{}到{}",
    year_style="digits",
    date_marks=("年", "月", "日"),
    clock="{hour}点{minute}分",
    clock_hour="{hour}点",
    minute_pad="零",
    hour_words={2: "两"},
    counters=frozenset(
        ("个", "只", "位", "件", "次", "天", "本", "张", "条", "杯", "种", "岁", "年", "周")
        + ("小时", "分钟", "个月")
    ),
    count_words={2: "两"},
    currency_names={
        "CNY": (("元",), ()),
        "JPY": (("日元",), ()),
        "USD": (("美元",), ()),
        "EUR": (("欧元",), ()),
    },
    currency_symbols={"¥": "CNY"},
)
