import sys

from bench.real_bugs.run import main

sys.exit(main())
