"""Templates of dates and times: calendars, durations, clocks, business days."""

from __future__ import annotations

import datetime
import random

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_text import each


def day(r: random.Random) -> datetime.date:
    return datetime.date(r.randint(1999, 2030), r.randint(1, 12), r.randint(1, 28))


def late_day(r: random.Random) -> datetime.date:
    """A date, often near the end of its month (where month arithmetic goes wrong)."""
    start = datetime.date(r.randint(2000, 2030), r.randint(1, 12), 1)
    end = (start + datetime.timedelta(days=32)).replace(day=1) - datetime.timedelta(days=1)
    return end - datetime.timedelta(days=r.choice((0, 0, 1, 2, r.randint(0, 27))))


def hhmm(r: random.Random) -> str:
    return f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}"


LEAP = Template(
    id="leap_years",
    module="calendar_utils",
    source='''
    """Calendar arithmetic without the datetime module (for the embedded build)."""


    def is_leap(year):
        return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


    def days_in_month(year, month):
        if month == 2:
            return 29 if is_leap(year) else 28
        if month in (4, 6, 9, 11):
            return 30
        return 31


    def day_of_year(year, month, day):
        """1 for January 1st."""
        total = day
        for m in range(1, month):
            total += days_in_month(year, m)
        return total
    ''',
    cases=lambda r: [
        *each(
            r, 4, lambda: ("is_leap", (r.choice((1900, 2000, 2004, 2023, 2024, 2100, 1996, 2400)),))
        ),
        *each(
            r, 5, lambda: ("days_in_month", (r.choice((1900, 2000, 2023, 2024)), r.randint(1, 12)))
        ),
        *each(
            r,
            6,
            lambda: (
                "day_of_year",
                (r.choice((1900, 2000, 2023, 2024)), r.randint(1, 12), r.randint(1, 28)),
            ),
        ),
    ],
)

DURATION = Template(
    id="parse_duration",
    module="durations",
    source='''
    """Durations written the way people type them: '1h30m', '45s', '2h 5m 10s'."""

    UNITS = {"h": $HOUR, "m": 60, "s": 1}


    def parse_duration(text):
        """Seconds in `text`; raises ValueError on an unknown unit or a missing number."""
        total = 0
        number = ""
        for ch in text.replace(" ", ""):
            if ch.isdigit():
                number += ch
            elif ch in UNITS and number:
                total += int(number) * UNITS[ch]
                number = ""
            else:
                raise ValueError(f"bad duration: {text!r}")
        if number:
            raise ValueError(f"missing unit in {text!r}")
        return total


    def format_duration(seconds):
        """The shortest spelling: 5400 -> '1h30m', 0 -> '0s'."""
        if seconds == 0:
            return "0s"
        out = ""
        for unit, size in UNITS.items():
            if seconds >= size:
                out += f"{seconds // size}{unit}"
                seconds %= size
        return out
    ''',
    params={"HOUR": ("3600",)},
    cases=lambda r: [
        *each(
            r,
            8,
            lambda: (
                "parse_duration",
                (
                    "".join(
                        f"{r.randint(0, 90)}{u}" for u in r.sample(("h", "m", "s"), r.randint(1, 3))
                    )
                    + r.choice(("", "", "5", "x")),
                ),
            ),
        ),
        *each(
            r,
            6,
            lambda: (
                "format_duration",
                (r.choice((0, 59, 60, 61, 3600, 3661, 7322, 86399, r.randint(0, 20000))),),
            ),
        ),
    ],
)

CLOCK = Template(
    id="clock_arithmetic",
    module="clock",
    source='''
    """Wall-clock times as 'HH:MM' strings, wrapping at midnight."""

    MINUTES_PER_DAY = 24 * 60


    def to_minutes(hhmm):
        hours, minutes = hhmm.split(":")
        if not (0 <= int(hours) < 24 and 0 <= int(minutes) < 60):
            raise ValueError(f"not a time: {hhmm}")
        return int(hours) * 60 + int(minutes)


    def from_minutes(total):
        total %= MINUTES_PER_DAY
        return f"{total // 60:02d}:{total % 60:02d}"


    def add_minutes(hhmm, minutes):
        return from_minutes(to_minutes(hhmm) + minutes)


    def minutes_between(start, end):
        """Minutes from `start` forward to `end` (the next day if `end` is earlier)."""
        diff = to_minutes(end) - to_minutes(start)
        return diff if diff >= 0 else diff + MINUTES_PER_DAY
    ''',
    cases=lambda r: [
        *each(r, 7, lambda: ("add_minutes", (hhmm(r), r.randint(-200, 2000)))),
        *each(r, 6, lambda: ("minutes_between", (hhmm(r), hhmm(r)))),
        *each(r, 2, lambda: ("to_minutes", (r.choice(("24:00", "12:60", "00:00", "23:59")),))),
    ],
)

ADD_MONTHS = Template(
    id="add_months",
    module="billing_dates",
    source='''
    """Billing dates: monthly renewals that stay on the same day where the month allows."""

    import datetime


    def add_months(day, months):
        """`day` moved by `months`, clamped to the last day of a shorter month."""
        index = day.month - 1 + months
        year = day.year + index // 12
        month = index % 12 + 1
        last = _month_length(year, month)
        return datetime.date(year, month, min(day.day, last))


    def _month_length(year, month):
        if month == 12:
            return 31
        return (datetime.date(year, month + 1, 1) - datetime.date(year, month, 1)).days


    def renewals(start, count):
        return [add_months(start, i) for i in range(1, count + 1)]
    ''',
    cases=lambda r: [
        *each(r, 10, lambda: ("add_months", (late_day(r), r.randint(-14, 30)))),
        *each(r, 4, lambda: ("renewals", (late_day(r), r.randint(1, 4)))),
    ],
)

BUSINESS_DAYS = Template(
    id="business_days",
    module="workdays",
    source='''
    """Counting working days for delivery estimates (Monday to Friday, no holidays)."""

    import datetime

    WEEKEND = {5, 6}


    def is_workday(day):
        return day.weekday() not in WEEKEND


    def add_workdays(day, n):
        """The date `n` working days after `day` (n >= 0); day itself does not count."""
        current = day
        while n > 0:
            current += datetime.timedelta(days=1)
            if is_workday(current):
                n -= 1
        return current


    def workdays_between(start, end):
        """Working days in [start, end)."""
        count = 0
        current = start
        while current < end:
            if is_workday(current):
                count += 1
            current += datetime.timedelta(days=1)
        return count
    ''',
    cases=lambda r: [
        *each(r, 7, lambda: ("add_workdays", (day(r), r.randint(0, 12)))),
        *each(
            r,
            7,
            lambda: (
                "workdays_between",
                (d := day(r), d + datetime.timedelta(days=r.randint(-2, 20))),
            ),
        ),
    ],
)


TEMPLATES = (LEAP, DURATION, CLOCK, ADD_MONTHS, BUSINESS_DAYS)
