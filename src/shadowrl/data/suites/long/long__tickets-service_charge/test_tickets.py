from app.tickets import night_rate, bulk_discount, volume_rebate


def test_night_rate():
    assert night_rate(2350) == 235
    assert night_rate(2349) == 0


def test_bulk_discount():
    assert bulk_discount(3550) == 639
    assert bulk_discount(3549) == 0


def test_volume_rebate():
    assert volume_rebate(800) == 176
    assert volume_rebate(799) == 0
