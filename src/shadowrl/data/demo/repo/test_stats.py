import unittest

from stats import mean, median


class TestStats(unittest.TestCase):
    def test_mean(self) -> None:
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_median_sorted(self) -> None:
        self.assertEqual(median([1, 2, 3]), 2)

    def test_median_unsorted(self) -> None:
        self.assertEqual(median([3, 1, 2]), 2)
        self.assertEqual(median([4, 1, 3, 2]), 2.5)


if __name__ == "__main__":
    unittest.main()
