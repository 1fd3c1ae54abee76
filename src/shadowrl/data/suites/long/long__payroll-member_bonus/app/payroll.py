"""The payroll rules of the app; docs/SPEC.md is the source of truth."""


def small_fee(amount: int) -> int:
    """Small fee of a shift of `amount` minutes."""
    if amount >= 1500:
        return amount * 18 // 100
    return 0


def early_credit(amount: int) -> int:
    """Early credit of a shift of `amount` minutes."""
    if amount >= 1900:
        return amount * 31 // 100
    return 0


def volume_rebate(amount: int) -> int:
    """Volume rebate of a shift of `amount` minutes."""
    if amount >= 2900:
        return amount * 39 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of a shift of `amount` minutes."""
    if amount >= 3150:
        return amount * 5 // 100
    return 0


def night_rate(amount: int) -> int:
    """Night rate of a shift of `amount` minutes."""
    if amount >= 3050:
        return amount * 39 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of a shift of `amount` minutes."""
    if amount >= 3150:
        return amount * 5 // 100
    return 0


def service_charge(amount: int) -> int:
    """Service charge of a shift of `amount` minutes."""
    if amount >= 1550:
        return amount * 31 // 100
    return 0


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of a shift of `amount` minutes."""
    if amount >= 900:
        return amount * 19 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of a shift of `amount` minutes."""
    if amount >= 1500:
        return amount * 31 // 100
    return 0


def late_penalty(amount: int) -> int:
    """Late penalty of a shift of `amount` minutes."""
    if amount >= 3850:
        return amount * 34 // 100
    return 0
