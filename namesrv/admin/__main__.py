import sys

from namesrv.admin.cli import main

sys.exit(main())
