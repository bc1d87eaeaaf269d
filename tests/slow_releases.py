"""The slow tier of tests/test_releases.py: every variant at every covered release (its fast tier runs each
release's default deployment, every variant at the newest and every refusal). Run by .ci/run after the README's
command, and by hand:

    python tests/run.py -p "slow_*.py"
"""
import unittest

from test_releases import CommandSyntax, matrix


class EveryVariantAtEveryRelease(CommandSyntax, unittest.TestCase):
    def test_every_variant_at_every_covered_release(self):
        self.each(matrix(everything=True))


if __name__ == "__main__":
    unittest.main()
