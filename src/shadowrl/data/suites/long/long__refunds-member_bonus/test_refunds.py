from app.refunds import early_credit, weekend_surcharge, bulk_discount


def test_early_credit():
    assert early_credit(2150) == 537
    assert early_credit(2149) == 0


def test_weekend_surcharge():
    assert weekend_surcharge(3500) == 1365
    assert weekend_surcharge(3499) == 0


def test_bulk_discount():
    assert bulk_discount(1550) == 248
    assert bulk_discount(1549) == 0
