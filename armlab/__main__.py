import sys

from armlab.cli import main

sys.exit(main())
