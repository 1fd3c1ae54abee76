from app.shipping import weekend_surcharge, volume_rebate, peak_levy


def test_weekend_surcharge():
    assert weekend_surcharge(1250) == 475
    assert weekend_surcharge(1249) == 0


def test_volume_rebate():
    assert volume_rebate(2600) == 962
    assert volume_rebate(2599) == 0


def test_peak_levy():
    assert peak_levy(1800) == 684
    assert peak_levy(1799) == 0
