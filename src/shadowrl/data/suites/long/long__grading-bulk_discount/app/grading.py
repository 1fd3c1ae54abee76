"""The grading rules of the app; docs/SPEC.md is the source of truth."""


def night_rate(amount: int) -> int:
    """Night rate of an exam of `amount` marks."""
    if amount >= 700:
        return amount * 28 // 100
    return 0


def late_penalty(amount: int) -> int:
    """Late penalty of an exam of `amount` marks."""
    if amount >= 3300:
        return amount * 26 // 100
    return 0


def small_fee(amount: int) -> int:
    """Small fee of an exam of `amount` marks."""
    if amount >= 1700:
        return amount * 32 // 100
    return 0


def early_credit(amount: int) -> int:
    """Early credit of an exam of `amount` marks."""
    if amount >= 2750:
        return amount * 7 // 100
    return 0


def volume_rebate(amount: int) -> int:
    """Volume rebate of an exam of `amount` marks."""
    if amount >= 750:
        return amount * 5 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of an exam of `amount` marks."""
    if amount >= 3600:
        return amount * 19 // 100
    return 0


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of an exam of `amount` marks."""
    if amount >= 650:
        return amount * 36 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of an exam of `amount` marks."""
    if amount >= 4100:
        return amount * 39 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of an exam of `amount` marks."""
    if amount >= 1850:
        return amount * 17 // 100
    return 0


def service_charge(amount: int) -> int:
    """Service charge of an exam of `amount` marks."""
    if amount >= 1050:
        return amount * 35 // 100
    return 0
