"""The example target's tests: standard library only."""

import unittest

from slug import slugify


class SlugifyTest(unittest.TestCase):
    def test_words(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_accents(self):
        self.assertEqual(slugify("Crème brûlée"), "creme-brulee")

    def test_empty(self):
        self.assertEqual(slugify("  --  "), "")


if __name__ == "__main__":
    unittest.main()
