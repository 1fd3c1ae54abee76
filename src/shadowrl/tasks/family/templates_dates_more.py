"""Templates of dates and times: calendars, durations, clocks, business days (continued)."""

from __future__ import annotations

import datetime
import random

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_dates import day
from shadowrl.tasks.family.templates_text import each

AGE = Template(
    id="age_on_date",
    module="ages",
    source='''
    """Ages and birthdays for the membership form."""

    import datetime


    def age_on(born, today):
        """Whole years from `born` to `today`."""
        years = today.year - born.year
        if (today.month, today.day) < (born.month, born.day):
            years -= 1
        return years


    def is_adult(born, today, age=$ADULT):
        return age_on(born, today) >= age


    def days_to_birthday(born, today):
        """Days until the next birthday (0 on the day); Feb 29 counts as Mar 1 in other years."""
        year = today.year
        while True:
            try:
                next_day = datetime.date(year, born.month, born.day)
            except ValueError:
                next_day = datetime.date(year, 3, 1)
            if next_day >= today:
                return (next_day - today).days
            year += 1
    ''',
    params={"ADULT": ("18", "21", "16")},
    cases=lambda r: [
        *each(r, 6, lambda: ("age_on", (day(r), day(r)))),
        *each(r, 4, lambda: ("is_adult", (day(r), day(r)))),
        *each(r, 4, lambda: ("days_to_birthday", (day(r), day(r)))),
    ],
)

OVERLAP = Template(
    id="date_ranges",
    module="bookings",
    source='''
    """Room bookings as (check_in, check_out) date pairs; check-out day is free again."""


    def overlaps(a, b):
        return a[0] < b[1] and b[0] < a[1]


    def nights(booking):
        return max((booking[1] - booking[0]).days, 0)


    def free(bookings, wanted):
        """True if `wanted` overlaps none of `bookings`."""
        for booking in bookings:
            if overlaps(booking, wanted):
                return False
        return True


    def occupancy(bookings, total_nights=$NIGHTS):
        """Booked nights as a whole percentage of `total_nights`, capped at 100."""
        booked = sum(nights(b) for b in bookings)
        return min(100, booked * 100 // total_nights)
    ''',
    params={"NIGHTS": ("30", "31", "28")},
    cases=lambda r: [
        *each(r, 6, lambda: ("overlaps", (span(r), span(r)))),
        *each(r, 4, lambda: ("free", ([span(r) for _ in range(r.randint(0, 3))], span(r)))),
        *each(r, 4, lambda: ("occupancy", ([span(r) for _ in range(r.randint(0, 4))],))),
    ],
)


def span(r: random.Random) -> tuple[datetime.date, datetime.date]:
    start = datetime.date(2024, 6, r.randint(1, 20))
    return start, start + datetime.timedelta(days=r.randint(0, 9))


QUARTER = Template(
    id="fiscal_quarters",
    module="fiscal",
    source='''
    """Fiscal periods for a year that starts in month $START."""

    START_MONTH = $START


    def fiscal_year(day):
        """The fiscal year a date falls in, named after the calendar year it ends in."""
        if START_MONTH == 1:
            return day.year
        return day.year + 1 if day.month >= START_MONTH else day.year


    def fiscal_quarter(day):
        """1 to 4."""
        offset = (day.month - START_MONTH) % 12
        return offset // 3 + 1


    def label(day):
        return f"FY{fiscal_year(day) % 100:02d}-Q{fiscal_quarter(day)}"
    ''',
    params={"START": ("4", "7", "10")},
    cases=lambda r: [
        *each(r, 5, lambda: ("fiscal_year", (day(r),))),
        *each(r, 5, lambda: ("fiscal_quarter", (day(r),))),
        *each(r, 4, lambda: ("label", (day(r),))),
    ],
)

WEEKS = Template(
    id="week_numbers",
    module="weeks",
    source='''
    """Week numbers for the rota: weeks start on $DAY_NAME."""

    import datetime

    FIRST_WEEKDAY = $DAY


    def week_start(day):
        """The first day of the week `day` is in."""
        back = (day.weekday() - FIRST_WEEKDAY) % 7
        return day - datetime.timedelta(days=back)


    def week_of_year(day):
        """1 for the week holding January 1st; weeks are counted from its start."""
        first = week_start(datetime.date(day.year, 1, 1))
        return (week_start(day) - first).days // 7 + 1


    def same_week(a, b):
        return week_start(a) == week_start(b)
    ''',
    params={"DAY": ("0",), "DAY_NAME": ("Monday",)},
    cases=lambda r: [
        *each(r, 5, lambda: ("week_start", (day(r),))),
        *each(r, 5, lambda: ("week_of_year", (day(r),))),
        *each(
            r,
            4,
            lambda: ("same_week", (d := day(r), d + datetime.timedelta(days=r.randint(-8, 8)))),
        ),
    ],
)


TEMPLATES = (AGE, OVERLAP, QUARTER, WEEKS)
