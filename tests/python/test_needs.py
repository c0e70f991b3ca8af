"""tests/python/needs.py: a missing data set or binary is a skip, except where CI=true, where it fails.

    PYTHONPATH=python /usr/bin/python3 -m unittest discover -s tests/python -t . -p 'test_needs.py'
"""
import os
import subprocess
import sys
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PROBE = r'''
import unittest
from tests.python.needs import needs
@needs(False, "no data")
class Whole(unittest.TestCase):
    def test_x(self): pass
class One(unittest.TestCase):
    @needs(False, "no data")
    def test_y(self): pass
    @needs(True, "present")
    def test_z(self): pass
suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromTestCase(c) for c in (Whole, One))
r = unittest.TextTestRunner(stream=open("/dev/null", "w")).run(suite)
print(len(r.failures) + len(r.errors), len(r.skipped), r.testsRun)
'''


def run_probe(ci):
    env = dict(os.environ, CI=ci, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), ROOT]))
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return [int(x) for x in out.stdout.split()]


class Needs(unittest.TestCase):
    def test_missing_is_a_skip_outside_ci(self):
        self.assertEqual(run_probe(""), [0, 2, 3])      # no failure, 2 skipped, 3 run

    def test_missing_fails_in_ci(self):
        # the class fails in setUpClass (its test never runs) and the method fails; nothing is skipped
        self.assertEqual(run_probe("true"), [2, 0, 2])


if __name__ == "__main__":
    unittest.main()
