"""`python -m lockharness …` is `lockharness …`."""

import sys

from lockharness.harness.cli.main import main

sys.exit(main())
