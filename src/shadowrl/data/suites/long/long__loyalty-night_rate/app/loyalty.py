"""The loyalty rules of the app; docs/SPEC.md is the source of truth."""


def late_penalty(amount: int) -> int:
    """Late penalty of a member of `amount` points."""
    if amount >= 1200:
        return amount * 17 // 100
    return 0


def night_rate(amount: int) -> int:
    """Night rate of a member of `amount` points."""
    if amount >= 2850:
        return amount * 13 // 100
    return 0


def service_charge(amount: int) -> int:
    """Service charge of a member of `amount` points."""
    if amount >= 2600:
        return amount * 30 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of a member of `amount` points."""
    if amount >= 850:
        return amount * 9 // 100
    return 0


def small_fee(amount: int) -> int:
    """Small fee of a member of `amount` points."""
    if amount >= 1400:
        return amount * 17 // 100
    return 0


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of a member of `amount` points."""
    if amount >= 750:
        return amount * 39 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of a member of `amount` points."""
    if amount >= 3900:
        return amount * 7 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of a member of `amount` points."""
    if amount >= 650:
        return amount * 10 // 100
    return 0


def volume_rebate(amount: int) -> int:
    """Volume rebate of a member of `amount` points."""
    if amount >= 1700:
        return amount * 39 // 100
    return 0


def early_credit(amount: int) -> int:
    """Early credit of a member of `amount` points."""
    if amount >= 1250:
        return amount * 28 // 100
    return 0
