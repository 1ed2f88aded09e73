"""Korean: native numbers before the listed counters and for the hour ("두 개", "열네 시"),
where num2words says only the Sino-Korean ones ("이"), month names with the sound 6 and 10 drop
("유월", "시월"), dates with their marks ("년", "월", "일"), "공" for a phone number's zero, and
the currencies' Korean names.
"""

from .base import Language

# Korean native numbers as they stand before a counter ("한 개", "스무 살"), by ones and tens;
# num2words says only the Sino-Korean ones ("일", "이").
_NATIVE_ONES = ("", "한", "두", "세", "네", "다섯", "여섯", "일곱", "여덟", "아홉")
_NATIVE_TENS = ("", "열", "스물", "서른", "마흔", "쉰", "예순", "일흔", "여든", "아흔")

# Korean native numbers 1–99 before a counter; twenty alone is "스무" ("스무 살").
_COUNT_WORDS = {
    tens * 10 + ones: _NATIVE_TENS[tens] + _NATIVE_ONES[ones]
    for tens in range(10)
    for ones in range(10)
    if tens or ones
} | {20: "스무"}

KOREAN = Language(
    code="ko",
    decimal_word="점",
    minus="마이너스",
    plus="플러스",
    equals="이퀄",
    and_word="그리고",
    at="골뱅이",
    dot="닷",
    times="곱하기",
    approx="약",
    percent="{0} 퍼센트",
    range_format="{}에서 {}",
    # 6 and 10 drop a sound before "월": "유월", "시월"
    # fmt: off
    month_names=(
        "일월", "이월", "삼월", "사월", "오월", "유월", "칠월", "팔월", "구월", "시월", "십일월",
        "십이월",
    ),
    # fmt: on
    date_marks=("년", "월", "일"),
    clock="{hour} 시 {minute} 분",
    clock_hour="{hour} 시",
    hour_words={0: "영"} | {hour: _COUNT_WORDS[hour] for hour in range(1, 25)},
    counters=frozenset(
        ("개", "명", "살", "마리", "시", "시간", "잔", "병", "권", "장", "대", "달")
    ),
    count_words=_COUNT_WORDS,
    currency_names={
        "KRW": (("원",), ()),
        "USD": (("달러",), ("센트",)),
        "EUR": (("유로",), ("센트",)),
        "JPY": (("엔",), ()),
    },
    phone_digits=("공", "일", "이", "삼", "사", "오", "육", "칠", "팔", "구"),
)
