from car_race_collision import car_race_collision


def test_example():
    assert car_race_collision(2) == 4
