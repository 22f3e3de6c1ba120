import sys

from bench.lib.cli import main

sys.exit(main())
