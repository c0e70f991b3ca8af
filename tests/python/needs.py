"""needs(available, reason): unittest.skipUnless, except where CI=true: there a test whose data or binary is
missing FAILS, so a CI run cannot pass on skipped checks. Elsewhere the skip stays a skip (unittest prints it)."""
import os
import unittest


def in_ci():
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def needs(available, reason):
    if available or not in_ci():
        return unittest.skipUnless(available, reason)

    def missing(test):
        if isinstance(test, type):
            def setUpClass(cls):
                raise AssertionError(f"CI=true and {reason}")
            test.setUpClass = classmethod(setUpClass)
            return test

        def fails(*_args, **_kwargs):
            raise AssertionError(f"CI=true and {reason}")
        fails.__name__ = test.__name__
        return fails
    return missing
