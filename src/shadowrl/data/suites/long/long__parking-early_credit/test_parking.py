from app.parking import weekend_surcharge, small_fee, volume_rebate


def test_weekend_surcharge():
    assert weekend_surcharge(2950) == 177
    assert weekend_surcharge(2949) == 0


def test_small_fee():
    assert small_fee(1500) == 165
    assert small_fee(1499) == 0


def test_volume_rebate():
    assert volume_rebate(2000) == 420
    assert volume_rebate(1999) == 0
