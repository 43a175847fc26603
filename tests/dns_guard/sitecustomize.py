"""Guards the tests' Python subprocesses against DNS lookups (see ``no_public_dns``).

``tests/conftest.py`` puts this folder first on ``PYTHONPATH`` and sets
``TESTS_DNS_GUARD_LOG``; Python imports this module at start. Outside the
tests (no such variable) it does nothing.
"""

import os

if os.environ.get("TESTS_DNS_GUARD_LOG"):
    import no_public_dns

    no_public_dns.install()
