"""`python -m lockharness …` is `lockharness …`."""

import sys

from lockharness.harness.cli import main

sys.exit(main())
