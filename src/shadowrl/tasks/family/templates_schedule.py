"""Templates of scheduling: free slots, room bookings, rotas, reminders, timesheets, queues."""

from __future__ import annotations

import random

from shadowrl.tasks.family.template import Template
from shadowrl.tasks.family.templates_text import each


def _busy(r: random.Random) -> list[tuple[int, int]]:
    out = []
    for _ in range(r.randint(0, 4)):
        start = r.choice((420, 480, 540, 600, 720, 900, 960, 1020, r.randrange(420, 1100, 15)))
        out.append((start, start + r.choice((30, 60, 60, 120))))
    return out


SLOTS = Template(
    id="free_slots",
    module="calendar_slots",
    source='''
    """Free meeting slots in a working day; times are minutes after midnight."""

    DAY_START = $START
    DAY_END = $END


    def free_slots(busy, length):
        """(start, end) gaps of at least `length` minutes between the busy intervals."""
        slots = []
        cursor = DAY_START
        for start, end in sorted(busy):
            start, end = max(start, DAY_START), min(end, DAY_END)
            if start - cursor >= length:
                slots.append((cursor, start))
            cursor = max(cursor, end)
        if DAY_END - cursor >= length:
            slots.append((cursor, DAY_END))
        return slots


    def first_slot(busy, length):
        """The start of the earliest free slot, or None."""
        slots = free_slots(busy, length)
        return slots[0][0] if slots else None
    ''',
    params={"START": ("480", "540"), "END": ("1020", "1080")},
    cases=lambda r: [
        *each(r, 9, lambda: ("free_slots", (_busy(r), r.choice((15, 30, 60, 120))))),
        *each(r, 5, lambda: ("first_slot", (_busy(r), r.choice((30, 60, 240, 600))))),
    ],
)


def _booking(r: random.Random) -> tuple[int, int]:
    start = r.randrange(480, 1080, 30) + r.choice((0, 0, 5, 10, 15))
    return start, start + r.choice((0, 30, 60, 90))


def _bookings(r: random.Random) -> list[tuple[int, int]]:
    return sorted({(s, s + 30) for s in r.sample(range(480, 1080, 60), r.randint(0, 4))})


def _pair(r: random.Random) -> tuple[tuple[int, int], tuple[int, int]]:
    start = r.randrange(480, 1080, 30)
    a = (start, start + r.choice((30, 60)))
    gap = r.choice((-30, 0, 5, 10, 15, 20))
    b = (a[1] + gap, a[1] + gap + 30)
    return (a, b) if r.random() < 0.5 else (b, a)


def _day(r: random.Random) -> list[tuple[int, int]]:
    starts = [r.randrange(0, 1410, 30) for _ in range(r.randint(0, 4))]
    return [(s, min(s + r.choice((0, 30, 60, 90, 120)), 1440)) for s in starts]


ROOMS = Template(
    id="room_bookings",
    module="rooms",
    source='''
    """Meeting-room bookings: a request fits if it clashes with no booking."""

    BUFFER = $BUFFER  # minutes kept free after every meeting


    def overlaps(a, b):
        """True if the (start, end) intervals, each followed by BUFFER minutes, meet."""
        return a[0] < b[1] + BUFFER and b[0] < a[1] + BUFFER


    def book(bookings, request):
        """The bookings with `request` added in start order; ValueError if it clashes."""
        start, end = request
        if end <= start:
            raise ValueError("empty booking")
        for existing in bookings:
            if overlaps(existing, request):
                raise ValueError(f"clashes with {existing}")
        return sorted([*bookings, request])


    def busiest_hour(bookings):
        """The hour (0-23) most bookings touch, the earliest on a tie; None if none."""
        counts = [0] * 24
        for start, end in bookings:
            for hour in range(start // 60, (end - 1) // 60 + 1):
                counts[hour] += 1
        if not any(counts):
            return None
        return counts.index(max(counts))
    ''',
    params={"BUFFER": ("0", "10", "15")},
    cases=lambda r: [
        *each(r, 6, lambda: ("overlaps", _pair(r))),
        *each(r, 6, lambda: ("book", (_bookings(r), _booking(r)))),
        *each(r, 6, lambda: ("busiest_hour", (_day(r),))),
    ],
)


def _away(r: random.Random) -> dict[str, list[str]]:
    days = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    return {p: r.sample(days, r.choice((0, 1, 2, 4))) for p in r.sample(("ana", "ben", "cat"), 2)}


ROTA = Template(
    id="duty_rota",
    module="rota",
    source='''
    """A weekly rota: people take turns on duty, skipping days they cannot do."""

    DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


    def rota(people, unavailable, start=$START):
        """{day: person}, turns going round `people` from index `start`; someone away on a
        day is covered by the next person and keeps their turn; None if nobody can."""
        plan = {}
        turn = start
        for day in DAYS:
            plan[day] = None
            for offset in range(len(people)):
                person = people[(turn + offset) % len(people)]
                if day not in unavailable.get(person, ()):
                    plan[day] = person
                    if offset == 0:
                        turn += 1
                    break
        return plan


    def duties(plan):
        """{person: days on duty} for everyone the plan names."""
        out = {}
        for person in plan.values():
            if person is not None:
                out[person] = out.get(person, 0) + 1
        return out
    ''',
    params={"START": ("0", "1", "2")},
    cases=lambda r: [
        *each(r, 6, lambda: ("rota", (["ana", "ben", "cat"][: r.randint(0, 3)], _away(r)))),
        *each(r, 4, lambda: ("rota", (["ana", "ben", "cat"], _away(r), r.randint(0, 4)))),
        *each(r, 5, lambda: ("duties", ({d: r.choice(("ana", "ben", None)) for d in "MTW"},))),
    ],
)


def _hhmm(r: random.Random) -> str:
    return f"{r.choice((6, 7, 9, 12, 17, 23))}:{r.choice(('00', '05', '30', '59'))}"


RECURRING = Template(
    id="recurring_times",
    module="recurrence",
    source='''
    """Times of a recurring reminder: every N minutes inside a daily window."""


    def parse(text):
        """'H:MM' or 'HH:MM' -> minutes after midnight."""
        hours, _, mins = text.partition(":")
        if not (hours.isdigit() and mins.isdigit()) or int(mins) > 59 or int(hours) > 23:
            raise ValueError(f"bad time {text!r}")
        return int(hours) * 60 + int(mins)


    def occurrences(start, end, every=$EVERY):
        """'HH:MM' times from `start` to `end` inclusive, `every` minutes apart."""
        first, last = parse(start), parse(end)
        if every <= 0:
            raise ValueError("the interval must be positive")
        return [f"{m // 60:02d}:{m % 60:02d}" for m in range(first, last + 1, every)]


    def next_after(now, start, end, every=$EVERY):
        """The first occurrence strictly after `now`, or None."""
        later = [t for t in occurrences(start, end, every) if parse(t) > parse(now)]
        return later[0] if later else None
    ''',
    params={"EVERY": ("15", "30", "45")},
    cases=lambda r: [
        *each(
            r, 4, lambda: ("parse", (r.choice(("7:05", "23:59", "24:00", "9:60", "12", "x:10")),))
        ),
        *each(r, 6, lambda: ("occurrences", (_hhmm(r), _hhmm(r), r.choice((20, 60, 90, 0, -15))))),
        *each(r, 2, lambda: ("occurrences", ("9:00", r.choice(("9:45", "10:30", "11:00"))))),
        *each(r, 5, lambda: ("next_after", (_hhmm(r), "7:00", "17:00", r.choice((30, 60, 120))))),
    ],
)

TIMESHEET = Template(
    id="timesheet",
    module="timesheet",
    source='''
    """Timesheets of 'HH:MM-HH:MM' entries; a shift may run past midnight."""

    BREAK_AFTER = $AFTER  # minutes worked from which an unpaid break is deducted
    BREAK = $BREAK


    def minutes(entry):
        """The length of one entry; an end before the start is on the next day."""
        start, _, end = entry.partition("-")
        h1, m1 = start.split(":")
        h2, m2 = end.split(":")
        length = int(h2) * 60 + int(m2) - (int(h1) * 60 + int(m1))
        if length < 0:
            length += 24 * 60
        return length


    def paid_minutes(entries):
        """Total paid time: every entry of BREAK_AFTER minutes or more loses BREAK minutes."""
        total = 0
        for entry in entries:
            worked = minutes(entry)
            total += worked - BREAK if worked >= BREAK_AFTER else worked
        return total


    def as_hours(total):
        return f"{total // 60}h{total % 60:02d}"
    ''',
    params={"AFTER": ("360", "300"), "BREAK": ("30", "45")},
    cases=lambda r: [
        *each(r, 5, lambda: ("minutes", (f"{_hhmm(r)}-{_hhmm(r)}",))),
        *each(r, 7, lambda: ("paid_minutes", ([f"{_hhmm(r)}-{_hhmm(r)}" for _ in range(3)],))),
        *each(r, 2, lambda: ("paid_minutes", (["9:00-14:00", "9:00-15:00", "22:00-4:00"],))),
        *each(r, 3, lambda: ("as_hours", (r.choice((0, 59, 60, 125, 600, r.randint(0, 3000))),))),
    ],
)

STATUSES = (200, 404, 428, 429, 430, 499, 500, 501, 503, 599, 600)

BACKOFF = Template(
    id="retry_backoff",
    module="backoff",
    source='''
    """Retry delays for the HTTP client: exponential backoff with a cap."""

    BASE_MS = $BASE
    CAP_MS = $CAP


    def delays(retries, factor=2):
        """The wait before each retry: BASE_MS, then times `factor` each time, capped."""
        if retries < 0:
            raise ValueError("negative retries")
        out = []
        wait = BASE_MS
        for _ in range(retries):
            out.append(min(wait, CAP_MS))
            wait *= factor
        return out


    def total_wait(retries, factor=2):
        return sum(delays(retries, factor))


    def should_retry(status, attempt, retries):
        """Retry server errors and 429, never other client errors, while retries remain."""
        if attempt >= retries:
            return False
        return status == 429 or 500 <= status < 600
    ''',
    params={"BASE": ("100", "250", "500"), "CAP": ("5000", "8000")},
    cases=lambda r: [
        *each(r, 5, lambda: ("delays", (r.choice((-1, 0, 1, 3, 6, 9)), r.choice((2, 3))))),
        ("delays", (0,)),
        *each(r, 4, lambda: ("total_wait", (r.choice((1, 4, 7, 10)),))),
        *each(r, 8, lambda: ("should_retry", (r.choice(STATUSES), r.choice((0, 1, 2, 3)), 3))),
        ("should_retry", (r.choice((429, 500, 503)), r.choice((0, 1)), 0)),
    ],
)


def _floors(r: random.Random) -> list[int]:
    return [r.choice((-3, -1, 0, 2, 5, 5, 8, 11, 15, 21)) for _ in range(r.randint(0, 5))]


LIFT = Template(
    id="lift_order",
    module="lift",
    source='''
    """The order a lift visits requested floors: on in its direction, then back."""

    LOWEST = $LOW
    HIGHEST = $TOP


    def visit_order(current, going_up, requests):
        """Floors ahead in the current direction, nearest first, then the rest on the way
        back; the current floor, repeats and floors the lift does not serve are dropped."""
        floors = sorted({f for f in requests if f != current and LOWEST <= f <= HIGHEST})
        above = [f for f in floors if f > current]
        below = [f for f in floors if f < current][::-1]
        return above + below if going_up else below + above


    def travel(current, going_up, requests):
        """The number of floors travelled to serve every request."""
        total = 0
        for floor in visit_order(current, going_up, requests):
            total += abs(floor - current)
            current = floor
        return total
    ''',
    params={"LOW": ("0", "-1", "-2"), "TOP": ("10", "12", "20")},
    cases=lambda r: [
        *each(r, 8, lambda: ("visit_order", (r.randint(0, 9), r.random() < 0.5, _floors(r)))),
        *each(r, 6, lambda: ("travel", (r.randint(0, 9), r.random() < 0.5, _floors(r)))),
    ],
)


def _tickets(r: random.Random) -> list[tuple[str, str, int]]:
    levels = ("urgent", "high", "normal", "low", "normal", "whenever")
    return [
        (f"T{i}", r.choice(levels), r.choice((0, 0, 5, 12, 30))) for i in range(r.randint(1, 5))
    ]


TRIAGE = Template(
    id="ticket_triage",
    module="triage",
    source='''
    """Support-ticket triage: the order tickets are worked on and when each is answered."""

    PRIORITY = {"urgent": 0, "high": 1, "normal": 2, "low": $LOW}


    def work_order(tickets):
        """Ticket ids by priority (unknown ones last), then arrival, then id."""
        return [t[0] for t in sorted(tickets, key=lambda t: (PRIORITY.get(t[1], 9), t[2], t[0]))]


    def answer_times(tickets, minutes_each=$EACH):
        """{id: minute answered}: one agent from minute 0, no ticket before it arrives."""
        arrivals = {t[0]: t[2] for t in tickets}
        clock = 0
        out = {}
        for ticket_id in work_order(tickets):
            clock = max(clock, arrivals[ticket_id]) + minutes_each
            out[ticket_id] = clock
        return out


    def late(tickets, limit):
        """Ids answered more than `limit` minutes after they arrived, in the order given."""
        times = answer_times(tickets)
        return [t[0] for t in tickets if times[t[0]] - t[2] > limit]
    ''',
    params={"LOW": ("3", "5"), "EACH": ("10", "15", "20")},
    cases=lambda r: [
        *each(r, 5, lambda: ("work_order", (_tickets(r),))),
        *each(r, 6, lambda: ("answer_times", (_tickets(r), r.choice((5, 10, 15))))),
        *each(r, 5, lambda: ("late", (_tickets(r), r.choice((0, 10, 15, 30, 45))))),
    ],
)


TEMPLATES = (SLOTS, ROOMS, ROTA, RECURRING, TIMESHEET, BACKOFF, LIFT, TRIAGE)
